package plan

import (
	"context"
	"fmt"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
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

// listClusters returns the joined clusters.
func (p *planner) listClusters(ctx context.Context) ([]corev1beta1.FederatedCluster, error) {
	var list corev1beta1.FederatedClusterList
	if err := p.host.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing FederatedClusters: %w", err)
	}
	return list.Items, nil
}

// ruledOut says why the resource is not placed on cluster.
func (pl placement) ruledOut(cluster string) string {
	if pl.deleting {
		return "the resource is being deleted"
	}
	return pl.decision.WhyNot(cluster)
}
