package plan

import (
	"context"
	"fmt"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// placement is where the scheduler puts the resource.
type placement struct {
	// names are the placed clusters, sorted; replicas those of the
	// clusters whose replicas the scheduler divides.
	names    []string
	replicas map[string]int32
	decision framework.Decision
	// message says it as the Scheduled condition would.
	message string
	// deleting: the resource is being deleted; it is placed nowhere.
	deleting bool
	// decided is the place stage's decision.
	decided propagation.Placement
}

// place runs the controller's place stage (propagation.Placer): the
// scheduler on the joined clusters, from the decision and copies the CPV
// records, within what the resource's namespace allows. When no decision
// can be made, the resource stays where it is.
func (p *planner) place(ctx context.Context, s *subject, clusters []corev1beta1.FederatedCluster) (placement, error) {
	if !s.fed.GetDeletionTimestamp().IsZero() {
		return placement{deleting: true, replicas: map[string]int32{}, message: "not scheduled: the resource is being deleted; its copies are deleted from every cluster"}, nil
	}
	placer := propagation.NewPlacer(s.kind.Type, overlay{Reader: p.host, scheme: p.scheme, planned: p.planned}, propagation.NamespacesOf(p.configs), p.scheduler)
	decided, err := placer.Place(ctx, s.fed, s.spec, s.cpv, clusters)
	if err != nil {
		return placement{}, err
	}
	_, _, message := decided.Scheduled()
	pl := placement{decision: decided.Decision(), replicas: map[string]int32{}, message: message, decided: decided}
	for _, pc := range decided.Clusters() {
		pl.names = append(pl.names, string(pc.Name))
		if pc.Replicas != nil {
			pl.replicas[string(pc.Name)] = *pc.Replicas
		}
	}
	return pl, nil
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

// placedCluster is a placed cluster with its replicas, as the CPV records
// it.
func (pl placement) placedCluster(name string) typesv1beta1.PlacedCluster {
	pc := typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(name)}
	if n, ok := pl.replicas[name]; ok {
		pc.Replicas = &n
	}
	return pc
}
