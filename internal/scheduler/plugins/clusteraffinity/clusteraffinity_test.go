package clusteraffinity

import (
	"testing"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	gold := &typesv1beta1.ClusterSelector{MatchLabels: map[string]string{"tier": "gold"}}
	names := func(ns ...typesv1beta1.ClusterName) []typesv1beta1.PlacementCluster {
		out := []typesv1beta1.PlacementCluster{}
		for _, n := range ns {
			out = append(out, typesv1beta1.PlacementCluster{Name: n})
		}
		return out
	}
	tests := []struct {
		name      string
		placement typesv1beta1.Placement
		cluster   framework.Cluster
		want      framework.Code
		reason    string
	}{
		{"named", typesv1beta1.Placement{Clusters: names("a")}, framework.Cluster{Name: "a"}, framework.Success, ""},
		{"not named", typesv1beta1.Placement{Clusters: names("a")}, framework.Cluster{Name: "b"}, framework.Unschedulable, "not in spec.placement.clusters"},
		{"empty list wins over selector", typesv1beta1.Placement{Clusters: names(), ClusterSelector: gold}, framework.Cluster{Name: "a", Labels: map[string]string{"tier": "gold"}}, framework.Unschedulable, "not in spec.placement.clusters"},
		{"selector matches", typesv1beta1.Placement{ClusterSelector: gold}, framework.Cluster{Name: "a", Labels: map[string]string{"tier": "gold"}}, framework.Success, ""},
		{"selector does not match", typesv1beta1.Placement{ClusterSelector: gold}, framework.Cluster{Name: "a"}, framework.Unschedulable, "labels do not match spec.placement.clusterSelector"},
		{"empty selector selects all", typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{}}, framework.Cluster{Name: "a"}, framework.Success, ""},
		{"no placement", typesv1beta1.Placement{}, framework.Cluster{Name: "a"}, framework.Unschedulable, "spec.placement names no cluster and has no clusterSelector"},
		{"excluded though named", typesv1beta1.Placement{Clusters: names("a"), ExcludeClusters: names("a")}, framework.Cluster{Name: "a"}, framework.Unschedulable, "excluded by spec.placement.excludeClusters"},
		{"excluded though selected", typesv1beta1.Placement{ClusterSelector: gold, ExcludeClusters: names("a")}, framework.Cluster{Name: "a", Labels: map[string]string{"tier": "gold"}}, framework.Unschedulable, "excluded by spec.placement.excludeClusters"},
		{"bad selector", typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{MatchExpressions: []typesv1beta1.ClusterSelectorRequirement{{Key: "tier", Operator: "In"}}}}, framework.Cluster{Name: "a"}, framework.Error, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &framework.State{Workload: &framework.Workload{Placement: tt.placement}}
			got := (&Plugin{}).Filter(s, &tt.cluster)
			if got.Code != tt.want {
				t.Fatalf("code = %v, want %v (%v)", got.Code, tt.want, got.Reasons)
			}
			if tt.reason != "" && (len(got.Reasons) != 1 || got.Reasons[0] != tt.reason) {
				t.Errorf("reasons = %q, want [%q]", got.Reasons, tt.reason)
			}
		})
	}
}
