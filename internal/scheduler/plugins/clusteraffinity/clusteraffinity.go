// Package clusteraffinity filters clusters by the workload's placement:
// the clusters it names (KubeFed's spec.placement.clusters; an empty list
// names none), else those its clusterSelector matches, minus those it
// excludes.
package clusteraffinity

import (
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
	p := s.Workload.Placement
	if named(p.ExcludeClusters, c.Name) {
		return framework.RuleOut("excluded by spec.placement.excludeClusters")
	}
	if p.Clusters != nil {
		if named(p.Clusters, c.Name) {
			return framework.OK()
		}
		return framework.RuleOut("not in spec.placement.clusters")
	}
	if p.ClusterSelector == nil {
		return framework.RuleOut("spec.placement names no cluster and has no clusterSelector")
	}
	selector, err := p.ClusterSelector.AsSelector()
	if err != nil {
		return framework.Fail("spec.placement.clusterSelector: %v", err)
	}
	if !selector.Matches(labels.Set(c.Labels)) {
		return framework.RuleOut("labels do not match spec.placement.clusterSelector")
	}
	return framework.OK()
}

func named(list []typesv1beta1.PlacementCluster, name string) bool {
	return slices.ContainsFunc(list, func(p typesv1beta1.PlacementCluster) bool { return string(p.Name) == name })
}
