package clusterhealth

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

func clusterAt(name string, created time.Time, id string) corev1beta1.FederatedCluster {
	return corev1beta1.FederatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1beta1.FederatedClusterStatus{ClusterID: id},
	}
}

func TestFirstOf(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	deleting := clusterAt("deleting", t0.Add(-time.Hour), "uid-1")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	clusters := []corev1beta1.FederatedCluster{
		clusterAt("old", t0, "uid-1"),
		clusterAt("new", t0.Add(time.Minute), "uid-1"),
		clusterAt("newest", t0.Add(2*time.Minute), "uid-1"),
		clusterAt("same-time-b", t0.Add(3*time.Minute), "uid-2"),
		clusterAt("same-time-a", t0.Add(3*time.Minute), "uid-2"),
		clusterAt("other", t0.Add(-time.Minute), "uid-3"),
		clusterAt("unprobed", t0.Add(-time.Minute), ""),
		deleting,
	}
	byName := map[string]*corev1beta1.FederatedCluster{}
	for i := range clusters {
		byName[clusters[i].Name] = &clusters[i]
	}
	tests := []struct {
		cluster, id string
		known       map[string]string
		want        string
	}{
		{cluster: "old", id: "uid-1", want: ""},                    // the first name keeps the cluster
		{cluster: "new", id: "uid-1", want: "old"},                 // a later name is a duplicate of it
		{cluster: "newest", id: "uid-1", want: "old"},              // of the first, not of the one before
		{cluster: "same-time-b", id: "uid-2", want: "same-time-a"}, // created in one second: by name
		{cluster: "same-time-a", id: "uid-2", want: ""},
		{cluster: "other", id: "uid-3", want: ""},
		// What this controller read last wins over a status not written yet,
		// or one that is stale because the endpoint changed.
		{cluster: "new", id: "uid-1", known: map[string]string{"old": "uid-9"}, want: ""},
		{cluster: "new", id: "uid-4", known: map[string]string{"unprobed": "uid-4"}, want: "unprobed"},
		// A cluster being deleted (unjoined) gives its cluster up.
		{cluster: "old", id: "uid-1", known: map[string]string{"deleting": "uid-1"}, want: ""},
	}
	for _, tt := range tests {
		if got := firstOf(clusters, byName[tt.cluster], tt.id, tt.known); got != tt.want {
			t.Errorf("firstOf(%s, %s, known %v) = %q, want %q", tt.cluster, tt.id, tt.known, got, tt.want)
		}
	}
}

func TestADuplicateIsNotReadyAtOnce(t *testing.T) {
	ready := statusAfter(observation{probe: readyProbe(), streak: 1})
	probe := readyProbe()
	probe.clusterID = "uid-1"
	st := nextStatus(ready, observation{probe: probe, streak: 5, duplicateOf: "first"}, th, 1, t1)
	if st.ClusterID != "uid-1" {
		t.Errorf("clusterID %q, want uid-1", st.ClusterID)
	}
	cond := findCondition(t, st, corev1beta1.ClusterReady)
	if cond.Status != metav1.ConditionFalse || cond.Reason != corev1beta1.ReasonDuplicateCluster {
		t.Fatalf("Ready %s/%s, want False/%s", cond.Status, cond.Reason, corev1beta1.ReasonDuplicateCluster)
	}
	if off := findCondition(t, st, corev1beta1.ClusterOffline); off.Status != metav1.ConditionFalse {
		t.Errorf("Offline %s, want False: the cluster answers", off.Status)
	}
	// Once the first name is unjoined, the next ready probe makes it Ready.
	st = nextStatus(st, observation{probe: probe, streak: 6}, th, 1, t1)
	if cond := findCondition(t, st, corev1beta1.ClusterReady); cond.Status != metav1.ConditionTrue {
		t.Errorf("Ready %s/%s after the first name left, want True", cond.Status, cond.Reason)
	}
}

func findCondition(t *testing.T, st corev1beta1.FederatedClusterStatus, typ string) metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		t.Fatalf("no %s condition in %+v", typ, st.Conditions)
	}
	return *c
}
