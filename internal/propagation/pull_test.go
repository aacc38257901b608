package propagation

import (
	"maps"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

func pullCluster(ready metav1.ConditionStatus) *corev1beta1.FederatedCluster {
	fc := &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge"}, Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePull}}
	fc.Status.Conditions = []metav1.Condition{{Type: corev1beta1.ClusterReady, Status: ready, Reason: "R", Message: "m"}}
	return fc
}

func TestReportedByAgent(t *testing.T) {
	v := render.Versions{Template: "3", Override: "2"}
	current := typesv1beta1.ClusterVersion{ClusterName: "edge", State: typesv1beta1.InSync, TemplateVersion: "3", OverrideVersion: "2", Version: "17"}
	behind := current
	behind.TemplateVersion = "2"
	drifted := current
	drifted.State, drifted.Message = typesv1beta1.ModifiedOutOfBand, "changed in the member by kubectl-edit"
	tests := []struct {
		name       string
		fc         *corev1beta1.FederatedCluster
		entry      *typesv1beta1.ClusterVersion
		wantState  typesv1beta1.DriftState
		wantReason string
		pending    bool
		message    string
	}{
		{"current and alive: propagated", pullCluster("True"), &current, typesv1beta1.InSync, typesv1beta1.ClusterPropagated, false, ""},
		{"no report yet: waiting", pullCluster("True"), nil, typesv1beta1.Unreachable, typesv1beta1.ClusterWaitingForAgent, true, "to apply template version 3"},
		{"behind: waiting, not drifted", pullCluster("True"), &behind, typesv1beta1.InSync, typesv1beta1.ClusterWaitingForAgent, true, "(it reports 2, 2)"},
		{"drift is reported as the agent says", pullCluster("True"), &drifted, typesv1beta1.ModifiedOutOfBand, string(typesv1beta1.ModifiedOutOfBand), false, "kubectl-edit"},
		{"agent silent: waiting, with its last report", pullCluster("False"), &current, typesv1beta1.InSync, typesv1beta1.ClusterWaitingForAgent, true, "its last report: InSync at template version 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var prev typesv1beta1.ClusterVersion
			if tt.entry != nil {
				prev = *tt.entry
			}
			res := reportedByAgent("edge", tt.fc, prev, tt.entry != nil, v)
			if res.state != tt.wantState || res.reason != tt.wantReason || res.pending != tt.pending || !strings.Contains(res.message, tt.message) || !res.fromAgent {
				t.Errorf("got state %s reason %s pending %v message %q fromAgent %v; want %s %s %v containing %q",
					res.state, res.reason, res.pending, res.message, res.fromAgent, tt.wantState, tt.wantReason, tt.pending, tt.message)
			}
			if (res.entry == nil) != (tt.entry == nil) {
				t.Errorf("entry %+v, want it kept as the agent wrote it", res.entry)
			}
		})
	}
}

// The host keeps a Pull cluster's entry exactly as its agent wrote it.
func TestCPVStatusKeepsAgentEntries(t *testing.T) {
	entry := typesv1beta1.ClusterVersion{ClusterName: "edge", State: typesv1beta1.ModifiedOutOfBand, TemplateVersion: "1", OverrideVersion: "1", Resync: "r1", ChangedPaths: []string{"/spec/replicas"}}
	res := reportedByAgent("edge", pullCluster("True"), entry, true, render.Versions{Template: "1", Override: "1"})
	st := cpvStatus(typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{entry}}, render.Versions{Template: "1", Override: "1"}, 1, []clusterResult{res}, "", 1, metav1.Now())
	if len(st.ClusterVersions) != 1 || st.ClusterVersions[0].Resync != "r1" || st.ClusterVersions[0].ChangedPaths[0] != "/spec/replicas" {
		t.Errorf("the agent's entry changed: %+v", st.ClusterVersions)
	}
	if *st.DriftedClusters != 1 {
		t.Errorf("driftedClusters = %d, want the agent's drift counted", *st.DriftedClusters)
	}
}

func TestPlacedLabels(t *testing.T) {
	got := placedLabels(map[string]string{"team": "a", typesv1beta1.LabelPlacedPrefix + "gone": ""}, []string{"east", "edge"})
	want := map[string]string{"team": "a", typesv1beta1.LabelPlacedPrefix + "east": "", typesv1beta1.LabelPlacedPrefix + "edge": ""}
	if !maps.Equal(got, want) {
		t.Errorf("placedLabels = %v, want %v", got, want)
	}
	if got := placedLabels(nil, nil); got != nil {
		t.Errorf("placedLabels(nil, nil) = %v, want nil", got)
	}
}

func TestOwnWrites(t *testing.T) {
	var w ownWrites
	cpv := func(rv string) *typesv1beta1.ClusterPropagatedVersion {
		return &typesv1beta1.ClusterPropagatedVersion{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "deployment-web", ResourceVersion: rv}}
	}
	for _, rv := range []string{"1", "2", "3", "4", "5"} {
		w.record(cpv(rv))
	}
	if w.mine(cpv("1")) {
		t.Error("only the last few writes are remembered")
	}
	if !w.mine(cpv("2")) || !w.mine(cpv("5")) {
		t.Error("recent writes must be recognised")
	}
	if w.mine(cpv("6")) {
		t.Error("someone else's write taken for ours")
	}
	key := types.NamespacedName{Namespace: "ns", Name: "deployment-web"}
	for rv, want := range map[string]bool{"4": true, "": true, "5": false, "12": false, "not-a-number": false} {
		if got := w.behind(key, rv); got != want {
			t.Errorf("behind(%q) after a write at 5 = %v, want %v", rv, got, want)
		}
	}
	if w.behind(types.NamespacedName{Namespace: "ns", Name: "deployment-other"}, "") {
		t.Error("a CPV this process never wrote taken for one its cache lags on")
	}
	w.forget(key)
	if w.mine(cpv("5")) || w.behind(key, "") {
		t.Error("forgotten CPV still remembered")
	}
}
