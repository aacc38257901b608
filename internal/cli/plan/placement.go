package plan

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// placement is where the scheduler puts the resource: the place stage's
// decision.
type placement struct {
	propagation.Placement
	decision framework.Decision
	// message says it as the Scheduled condition would.
	message string
	// deleting: the resource is being deleted; it is placed nowhere.
	deleting bool
}

// place runs the controller's place stage (propagation.Placer): the
// scheduler on the joined clusters, from the decision and copies the CPV
// records, within what the resource's namespace allows. When no decision
// can be made, the resource stays where it is.
func (p *planner) place(ctx context.Context, s *subject, clusters []corev1beta1.FederatedCluster) (placement, error) {
	if !s.fed.GetDeletionTimestamp().IsZero() {
		return placement{deleting: true, message: "not scheduled: the resource is being deleted; its copies are deleted from every cluster"}, nil
	}
	placer := propagation.NewPlacer(s.kind.Type, overlay{Reader: p.host, scheme: p.scheme, planned: p.planned}, propagation.NamespacesOf(p.configs), p.scheduler)
	decided, err := placer.Place(ctx, s.fed, s.spec, s.cpv, clusters)
	if err != nil {
		return placement{}, err
	}
	_, _, message := decided.Scheduled()
	return placement{Placement: decided, decision: decided.Decision(), message: message}, nil
}

// listClusters returns the joined clusters, those of --what-if-down not
// Ready for long past any failover toleration.
func (p *planner) listClusters(ctx context.Context) ([]corev1beta1.FederatedCluster, error) {
	var list corev1beta1.FederatedClusterList
	if err := p.host.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing FederatedClusters: %w", err)
	}
	for _, name := range p.down {
		i := slices.IndexFunc(list.Items, func(fc corev1beta1.FederatedCluster) bool { return fc.Name == name })
		if i < 0 {
			return nil, streams.UsageError(fmt.Errorf("--what-if-down %s: no FederatedCluster of that name is joined", name))
		}
		meta.SetStatusCondition(&list.Items[i].Status.Conditions, metav1.Condition{
			Type: corev1beta1.ClusterReady, Status: metav1.ConditionFalse, Reason: reasonWhatIfDown,
			Message: "planned as down (--what-if-down)", LastTransitionTime: metav1.NewTime(time.Now().Add(-downFor)),
		})
	}
	return list.Items, nil
}

// reasonWhatIfDown is the Ready condition's reason of a cluster planned as
// down, and downFor how long it is taken to have been: longer than any
// failover toleration admission allows.
const (
	reasonWhatIfDown = "WhatIfDown"
	downFor          = 48 * time.Hour
)

// isDown tells whether cluster is planned as down.
func (p *planner) isDown(cluster string) bool { return slices.Contains(p.down, cluster) }

// ruledOut says why the resource is not placed on cluster.
func (pl placement) ruledOut(cluster string) string {
	if pl.deleting {
		return "the resource is being deleted"
	}
	return pl.decision.WhyNot(cluster)
}
