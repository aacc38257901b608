package propagation

import (
	"maps"
	"slices"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
)

// place returns the sorted names of the clusters a placement selects among
// the joined clusters, as the scheduler's ClusterAffinity reads it (see
// clusteraffinity.Selects): spec.placement.clusters by name when the list
// is present (an empty list selects none, as in KubeFed), else the clusters
// whose labels match clusterSelector (an empty selector selects all), else
// none; never one spec.placement.excludeClusters names. Named clusters
// that are not joined are returned too: their status says so.
func place(p typesv1beta1.Placement, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	labelsOf := map[string]map[string]string{}
	for _, c := range clusters {
		labelsOf[c.Name] = c.Labels
	}
	candidates := slices.Collect(maps.Keys(labelsOf))
	for _, c := range p.Clusters {
		candidates = append(candidates, string(c.Name))
	}
	if p.Clusters == nil && p.ClusterSelector == nil {
		return nil, nil // no placement at all
	}
	if p.Clusters == nil {
		// A bad selector is an error even when no cluster is joined.
		if _, err := clusteraffinity.Selector(p); err != nil {
			return nil, err
		}
	}
	var names []string
	if p.Clusters != nil {
		names = []string{} // placed on a list, maybe nowhere on purpose
	}
	for _, name := range candidates {
		ok, _, err := clusteraffinity.Selects(p, name, labelsOf[name])
		if err != nil {
			return nil, err
		}
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}
