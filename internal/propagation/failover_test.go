package propagation

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func TestJudgeFailover(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	cluster := func(name string, ready bool, since time.Duration) corev1beta1.FederatedCluster {
		fc := corev1beta1.FederatedCluster{}
		fc.Name = name
		status := metav1.ConditionFalse
		if ready {
			status = metav1.ConditionTrue
		}
		fc.Status.Conditions = []metav1.Condition{{Type: corev1beta1.ClusterReady, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-since))}}
		return fc
	}
	placed := func(name string, n int32, failedOver *metav1.Time) typesv1beta1.PlacedCluster {
		return typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(name), Replicas: &n, FailedOverAt: failedOver}
	}
	current := func(names ...string) []typesv1beta1.ClusterVersion {
		var out []typesv1beta1.ClusterVersion
		for _, n := range names {
			out = append(out, typesv1beta1.ClusterVersion{ClusterName: typesv1beta1.ClusterName(n), State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy})
		}
		return out
	}
	earlier := metav1.NewTime(now.Add(-10 * time.Minute))
	recent := metav1.NewTime(now.Add(-20 * time.Second))
	manual := &typesv1beta1.FailoverPolicy{Failback: typesv1beta1.FailbackManual, FailbackAfterSeconds: new(int32(0))}
	for _, tt := range []struct {
		name        string
		policy      *typesv1beta1.FailoverPolicy
		undivided   bool
		annotations map[string]string
		clusters    []corev1beta1.FederatedCluster
		placed      []typesv1beta1.PlacedCluster
		versions    []typesv1beta1.ClusterVersion
		wantAt      []string
		failed      []string
		returned    []string
		waiting     string // a part of c's reason to wait
	}{
		{
			name:     "no policy: nothing is judged",
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", false, time.Hour)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("c", 2, nil)},
		},
		{
			name:      "copies that are not divided: nothing is judged",
			policy:    &typesv1beta1.FailoverPolicy{},
			undivided: true,
			clusters:  []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", false, time.Hour)},
			placed:    []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("c", 2, nil)},
		},
		{
			name:     "not Ready past the default toleration: fails over",
			policy:   &typesv1beta1.FailoverPolicy{},
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", false, 61*time.Second)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("c", 2, nil)},
			wantAt:   []string{"c"}, failed: []string{"c"},
		},
		{
			name:     "not Ready within the toleration: waits",
			policy:   &typesv1beta1.FailoverPolicy{TolerationSeconds: new(int32(90))},
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", false, time.Minute)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("c", 2, nil)},
			waiting:  "not Ready for 1m0s of the 1m30s tolerated",
		},
		{
			name:     "back for failbackAfter with a current copy: returns",
			policy:   &typesv1beta1.FailoverPolicy{},
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", true, 5*time.Minute)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 4, nil), placed("c", 2, &earlier)},
			versions: current("a", "c"),
			returned: []string{"c"},
		},
		{
			name:        "Manual: a request made before the failover does not count",
			policy:      manual,
			clusters:    []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", true, 5*time.Minute)},
			placed:      []typesv1beta1.PlacedCluster{placed("a", 4, nil), placed("c", 2, &earlier)},
			versions:    current("a", "c"),
			annotations: map[string]string{typesv1beta1.AnnotationFailbackRequested: now.Add(-time.Hour).Format(time.RFC3339)},
			wantAt:      []string{"c"},
			waiting:     "fedwarden failback",
		},
		{
			name:        "Manual: a request for another cluster does not count",
			policy:      manual,
			clusters:    []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", true, 5*time.Minute)},
			placed:      []typesv1beta1.PlacedCluster{placed("a", 4, nil), placed("c", 2, &earlier)},
			versions:    current("a", "c"),
			annotations: map[string]string{typesv1beta1.AnnotationFailbackRequested: now.Format(time.RFC3339), typesv1beta1.AnnotationFailbackClusters: "a,b"},
			wantAt:      []string{"c"},
			waiting:     "fedwarden failback",
		},
		{
			name:        "Manual: a request that cannot be read is said to ask for nothing",
			policy:      manual,
			clusters:    []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", true, 5*time.Minute)},
			placed:      []typesv1beta1.PlacedCluster{placed("a", 4, nil), placed("c", 2, &earlier)},
			versions:    current("a", "c"),
			annotations: map[string]string{typesv1beta1.AnnotationFailbackRequested: "yesterday"},
			wantAt:      []string{"c"},
			waiting:     `"yesterday" is not an RFC 3339 time, so it asks for nothing`,
		},
		{
			name:        "Manual: a request since the failover returns it",
			policy:      manual,
			clusters:    []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("c", true, 5*time.Minute)},
			placed:      []typesv1beta1.PlacedCluster{placed("a", 4, nil), placed("c", 2, &earlier)},
			versions:    current("a", "c"),
			annotations: map[string]string{typesv1beta1.AnnotationFailbackRequested: now.Format(time.RFC3339), typesv1beta1.AnnotationFailbackClusters: "b,c"},
			returned:    []string{"c"},
		},
		{
			name:     "at most maxFailoversPerMinute clusters fail over in a minute",
			policy:   &typesv1beta1.FailoverPolicy{MaxFailoversPerMinute: new(int32(1))},
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour), cluster("b", false, time.Hour), cluster("c", false, time.Hour)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("b", 2, &recent), placed("c", 2, nil)},
			wantAt:   []string{"b"},
			waiting:  "at most 1 failovers a minute",
		},
		{
			name:     "a cluster that is not joined is left to its unjoin",
			policy:   &typesv1beta1.FailoverPolicy{},
			clusters: []corev1beta1.FederatedCluster{cluster("a", true, time.Hour)},
			placed:   []typesv1beta1.PlacedCluster{placed("a", 2, nil), placed("c", 2, nil)},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fed := &unstructured.Unstructured{}
			fed.SetAnnotations(tt.annotations)
			cpv := &typesv1beta1.ClusterPropagatedVersion{}
			cpv.Spec.Clusters, cpv.Status.ClusterVersions = tt.placed, tt.versions
			f := judgeFailover(fed, typesv1beta1.Placement{Failover: tt.policy}, !tt.undivided, cpv, tt.clusters, now)
			if tt.policy == nil || tt.undivided {
				if f != nil || f.clusters() != nil {
					t.Errorf("judged %+v; want nothing", f)
				}
				return
			}
			if got := slices.Sorted(maps.Keys(f.at)); !slices.Equal(got, tt.wantAt) || !slices.Equal(f.failed, tt.failed) || !slices.Equal(f.returned, tt.returned) {
				t.Errorf("failed over %v, failed %v, returned %v; want %v, %v, %v", got, f.failed, f.returned, tt.wantAt, tt.failed, tt.returned)
			}
			if !strings.Contains(f.waiting["c"], tt.waiting) || (tt.waiting == "" && f.waiting["c"] != "") {
				t.Errorf("c waits: %q; want %q", f.waiting["c"], tt.waiting)
			}
			if at, ok := f.at["c"]; ok && slices.Contains(tt.failed, "c") && !at.Equal(&metav1.Time{Time: now}) {
				t.Errorf("c failed over at %s; want now, to the second", at)
			}
		})
	}
}

func TestFailoverCondition(t *testing.T) {
	t.Parallel()
	at := metav1.NewTime(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	f := &failoverState{at: map[string]metav1.Time{"c": at}, replicas: map[string]int32{"c": 2}, waiting: map[string]string{"c": "Ready again for 10s"}}
	ok, reason, msg, set := f.condition(nil)
	if !ok || !set || reason != typesv1beta1.ReasonFailedOver ||
		msg != "cluster c failed over at 2026-12-07T12:00:00Z: its 2 replicas run on the other Ready clusters, and its copy is kept; failback: Ready again for 10s" {
		t.Errorf("condition while failed over: %v %s %q", ok, reason, msg)
	}
	back := &failoverState{at: map[string]metav1.Time{}}
	if _, _, _, set := back.condition(nil); set {
		t.Error("a resource that never failed over got a FailedOver condition")
	}
	ok, reason, _, set = back.condition(&metav1.Condition{Status: metav1.ConditionTrue})
	if ok || !set || reason != typesv1beta1.ReasonFailedBack {
		t.Errorf("condition after the last failback: %v %s; want False FailedBack", ok, reason)
	}
	var none *failoverState // the policy removed while a cluster was failed over
	ok, reason, msg, set = none.condition(&metav1.Condition{Status: metav1.ConditionTrue})
	if ok || !set || reason != typesv1beta1.ReasonFailedBack || !strings.Contains(msg, "no failover policy applies any more") {
		t.Errorf("condition once no policy applies: %v %s %q; want False FailedBack, saying why", ok, reason, msg)
	}
	if _, _, _, set := none.condition(nil); set {
		t.Error("a resource without a policy that never failed over got a FailedOver condition")
	}
}

func TestFailoverHistory(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	failedOver := &failoverState{at: map[string]metav1.Time{"c": t0}, replicas: map[string]int32{"a": 3, "c": 2}}
	opened := failoverHistory(nil, failedOver, []string{"b"}, t0)
	if len(opened) != 1 || opened[0].Cluster != "c" || !opened[0].Start.Equal(&t0) || opened[0].End != nil ||
		opened[0].Replicas == nil || *opened[0].Replicas != 2 || !slices.Equal(opened[0].Surge, []typesv1beta1.ClusterName{"b"}) {
		t.Fatalf("an episode opened: %+v", opened)
	}
	if again := failoverHistory(opened, failedOver, []string{"b"}, t1); !slices.EqualFunc(again, opened, func(a, b typesv1beta1.FailoverEpisode) bool {
		return a.Cluster == b.Cluster && a.End == nil && len(a.Surge) == 1
	}) {
		t.Errorf("a sync that changes nothing changed the ledger: %+v", again)
	}
	for _, tt := range []struct {
		name string
		f    *failoverState
		want string
	}{
		{"failed back automatically", &failoverState{at: map[string]metav1.Time{}, returned: []string{"c"}}, typesv1beta1.FailoverEndedAutomatic},
		{"failed back on the command", &failoverState{at: map[string]metav1.Time{}, returned: []string{"c"}, manual: true}, typesv1beta1.FailoverEndedManual},
		{"the policy removed", nil, typesv1beta1.FailoverEndedPolicy},
	} {
		closed := failoverHistory(opened, tt.f, nil, t1)
		if len(closed) != 1 || closed[0].End == nil || !closed[0].End.Equal(&t1) || closed[0].EndedBy != tt.want || opened[0].End != nil {
			t.Errorf("%s: %+v; want the episode ended at %s by %s, the old ledger untouched", tt.name, closed, t1, tt.want)
		}
	}
	var long []typesv1beta1.FailoverEpisode
	for i := range typesv1beta1.MaxFailoverHistory {
		long = append(long, typesv1beta1.FailoverEpisode{Cluster: typesv1beta1.ClusterName(fmt.Sprint("old-", i)), Start: t0, End: &t0})
	}
	if got := failoverHistory(long, failedOver, nil, t1); len(got) != typesv1beta1.MaxFailoverHistory || got[0].Cluster != "old-1" || got[len(got)-1].Cluster != "c" {
		t.Errorf("a full ledger: %d episodes, first %s, last %s; want the oldest dropped", len(got), got[0].Cluster, got[len(got)-1].Cluster)
	}
	if got := failoverHistory(nil, nil, nil, t1); got != nil {
		t.Errorf("no policy, no ledger: %+v", got)
	}
}
