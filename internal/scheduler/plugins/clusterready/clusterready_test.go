package clusterready

import (
	"testing"

	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

func TestFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cluster framework.Cluster
		want    framework.Code
		reason  string
	}{
		{"ready", framework.Cluster{Joined: true, Ready: true}, framework.Success, ""},
		{"not joined", framework.Cluster{}, framework.Unschedulable, "not joined: there is no FederatedCluster of that name"},
		{"not ready", framework.Cluster{Joined: true, NotReady: "ClusterUnreachable: connection refused"}, framework.Unschedulable, "not Ready: ClusterUnreachable: connection refused"},
		{"not ready, no reason", framework.Cluster{Joined: true}, framework.Unschedulable, "not Ready"},
		{"not ready but already scheduled", framework.Cluster{Joined: true, Previous: &framework.Previous{}}, framework.Success, ""},
		{"not joined though scheduled", framework.Cluster{Previous: &framework.Previous{}}, framework.Unschedulable, "not joined: there is no FederatedCluster of that name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := (&Plugin{}).Filter(&framework.State{Workload: &framework.Workload{}}, &tt.cluster)
			if got.Code != tt.want {
				t.Fatalf("code = %v, want %v (%v)", got.Code, tt.want, got.Reasons)
			}
			if tt.reason != "" && (len(got.Reasons) != 1 || got.Reasons[0] != tt.reason) {
				t.Errorf("reasons = %q, want [%q]", got.Reasons, tt.reason)
			}
		})
	}
}
