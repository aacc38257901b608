package propagation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// place returns the sorted names of the clusters a placement selects among
// the joined clusters: spec.placement.clusters by name when the list is
// present (an empty list selects none, as in KubeFed), else the clusters
// whose labels match clusterSelector (an empty selector selects all), else
// none. Named clusters that are not joined are returned too: their status
// says so.
func place(p typesv1beta1.Placement, clusters []corev1beta1.FederatedCluster) ([]string, error) {
	if p.Clusters != nil {
		names := make([]string, 0, len(p.Clusters))
		for _, c := range p.Clusters {
			names = append(names, string(c.Name))
		}
		slices.Sort(names)
		return slices.Compact(names), nil
	}
	if p.ClusterSelector == nil {
		return nil, nil
	}
	selector, err := p.ClusterSelector.AsSelector()
	if err != nil {
		return nil, fmt.Errorf("spec.placement.clusterSelector: %w", err)
	}
	var names []string
	for _, c := range clusters {
		if selector.Matches(labels.Set(c.Labels)) {
			names = append(names, c.Name)
		}
	}
	slices.Sort(names)
	return names, nil
}
