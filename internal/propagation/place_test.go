package propagation

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestPlace(t *testing.T) {
	clusters := []corev1beta1.FederatedCluster{
		{ObjectMeta: metav1.ObjectMeta{Name: "beijing", Labels: map[string]string{"region": "cn-north", "tier": "gold"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "shanghai", Labels: map[string]string{"region": "cn-east", "tier": "gold"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "frankfurt", Labels: map[string]string{"region": "eu-central"}}},
	}
	tests := []struct {
		name string
		p    typesv1beta1.Placement
		want []string
	}{
		{"no placement: no cluster", typesv1beta1.Placement{}, nil},
		{"empty list: no cluster, even with a selector", typesv1beta1.Placement{Clusters: []typesv1beta1.PlacementCluster{}, ClusterSelector: &typesv1beta1.ClusterSelector{}}, []string{}},
		{"names, sorted, unjoined kept", typesv1beta1.Placement{Clusters: []typesv1beta1.PlacementCluster{{Name: "shanghai"}, {Name: "mars"}}}, []string{"mars", "shanghai"}},
		{"empty selector: all", typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{}}, []string{"beijing", "frankfurt", "shanghai"}},
		{"match labels", typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{MatchLabels: map[string]string{"tier": "gold"}}}, []string{"beijing", "shanghai"}},
		// excludeClusters wins, as in the scheduler (clusteraffinity.Selects).
		{"excluded though selected", typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{}, ExcludeClusters: []typesv1beta1.PlacementCluster{{Name: "frankfurt"}}}, []string{"beijing", "shanghai"}},
		{"excluded though named", typesv1beta1.Placement{Clusters: []typesv1beta1.PlacementCluster{{Name: "beijing"}, {Name: "mars"}}, ExcludeClusters: []typesv1beta1.PlacementCluster{{Name: "beijing"}}}, []string{"mars"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := place(tt.p, clusters)
			if err != nil {
				t.Fatal(err)
			}
			// An empty list (placed nowhere on purpose) comes back empty,
			// no placement at all nil.
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) {
				t.Errorf("place = %#v, want %#v", got, tt.want)
			}
		})
	}
}
