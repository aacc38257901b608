// Package clusteraffinity filters clusters by the workload's placement:
// the clusters it names (KubeFed's spec.placement.clusters; an empty list
// names none), else those its clusterSelector matches, minus those it
// excludes.
package clusteraffinity

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/labels"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// Name of the plugin.
const Name = "ClusterAffinity"

// Plugin is the ClusterAffinity filter.
type Plugin struct{}

var (
	_ framework.FilterPlugin = (*Plugin)(nil)
	_ framework.IntentPlugin = (*Plugin)(nil)
)

// New returns the plugin.
func New() framework.Plugin { return &Plugin{} }

// Name returns the plugin's name.
func (*Plugin) Name() string { return Name }

// IsIntent is always true: the placement is the user's intent, and a
// cluster it does not select loses its copy.
func (*Plugin) IsIntent(*framework.State) bool { return true }

// Filter rules out a cluster the placement does not select.
func (*Plugin) Filter(s *framework.State, c *framework.Cluster) framework.Result {
	ok, why, err := Selects(s.Workload.Placement, c.Name, c.Labels)
	switch {
	case err != nil:
		return framework.Fail("%v", err)
	case !ok:
		return framework.RuleOut("%s", why)
	}
	return framework.OK()
}

// Selects reports whether placement p selects the cluster name, whose
// labels are clusterLabels, and if not, why; err is set when p's selector
// cannot be parsed. It is the one reading of a placement: the scheduler's,
// and the one that finds where a FederatedNamespace's resources may go.
func Selects(p typesv1beta1.Placement, name string, clusterLabels map[string]string) (ok bool, why string, err error) {
	if named(p.ExcludeClusters, name) {
		return false, "excluded by spec.placement.excludeClusters", nil
	}
	if p.Clusters != nil {
		if named(p.Clusters, name) {
			return true, "", nil
		}
		return false, "not in spec.placement.clusters", nil
	}
	if p.ClusterSelector == nil {
		return false, "spec.placement names no cluster and has no clusterSelector", nil
	}
	selector, err := Selector(p)
	if err != nil {
		return false, "", err
	}
	if !selector.Matches(labels.Set(clusterLabels)) {
		return false, "labels do not match spec.placement.clusterSelector", nil
	}
	return true, "", nil
}

// Selector returns p's clusterSelector as a labels.Selector (nil when p
// has none), or why it cannot be parsed.
func Selector(p typesv1beta1.Placement) (labels.Selector, error) {
	if p.ClusterSelector == nil {
		return nil, nil
	}
	selector, err := p.ClusterSelector.AsSelector()
	if err != nil {
		return nil, fmt.Errorf("spec.placement.clusterSelector: %w", err)
	}
	return selector, nil
}

func named(list []typesv1beta1.PlacementCluster, name string) bool {
	return slices.ContainsFunc(list, func(p typesv1beta1.PlacementCluster) bool { return string(p.Name) == name })
}
