package v1beta1

import (
	"encoding/json"
	"testing"
)

// TestPlacementKeepsAnEmptyClusterList checks that an empty clusters list,
// which means "no cluster", survives a typed round trip instead of turning
// into "no list", which means "use the selector".
func TestPlacementKeepsAnEmptyClusterList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		placement Placement
		want      string
	}{
		{"absent", Placement{}, `{}`},
		{"empty: no cluster", Placement{Clusters: []PlacementCluster{}}, `{"clusters":[]}`},
		{"named", Placement{Clusters: []PlacementCluster{{Name: "c1"}}}, `{"clusters":[{"name":"c1"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, err := json.Marshal(tt.placement)
			if err != nil {
				t.Fatal(err)
			}
			if string(data) != tt.want {
				t.Fatalf("marshalled %s, want %s", data, tt.want)
			}
			var back Placement
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatal(err)
			}
			if (back.Clusters == nil) != (tt.placement.Clusters == nil) {
				t.Errorf("round trip turned clusters %#v into %#v", tt.placement.Clusters, back.Clusters)
			}
		})
	}
}
