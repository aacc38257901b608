package replicadivision

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

type option func(*framework.Cluster)

// running says the last decision gave the cluster n replicas.
func running(n int32) option {
	return func(c *framework.Cluster) { c.Previous = &framework.Previous{Replicas: new(n)} }
}

func notReady(c *framework.Cluster) { c.Ready, c.NotReady = false, "ClusterUnreachable" }

// freeCPU gives the cluster a measured capacity of cpu free cores.
func freeCPU(cpu string) option {
	return func(c *framework.Cluster) {
		c.Capacity = &framework.Capacity{Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
}

// freeMemory gives the cluster a measured capacity that limits memory only.
func freeMemory(mem string) option {
	return func(c *framework.Cluster) {
		c.Capacity = &framework.Capacity{Free: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}}
	}
}

// cluster is a Ready, joined candidate.
func cluster(name string, opts ...option) framework.ScoredCluster {
	c := &framework.Cluster{Name: name, Joined: true, Ready: true}
	for _, o := range opts {
		o(c)
	}
	return framework.ScoredCluster{Cluster: c}
}

type prefs = map[string]schedulingv1alpha1.ClusterPreferences

func weight(w int64) schedulingv1alpha1.ClusterPreferences {
	return schedulingv1alpha1.ClusterPreferences{Weight: w}
}

func spec(total int32, rebalance bool, clusters prefs) *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec {
	return &schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{
		TargetKind: "FederatedDeployment", TotalReplicas: total, Rebalance: rebalance, Clusters: clusters}
}

// state is the workload of spec with pods requesting cpu (none if empty).
func state(pref *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, cpu string, clusters []framework.ScoredCluster) *framework.State {
	w := &framework.Workload{Kind: "FederatedDeployment", Namespace: "ns", Name: "web",
		Replicas: new(int32(1)), Preference: pref}
	if cpu != "" {
		w.PodRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	s := &framework.State{Workload: w}
	for _, c := range clusters {
		s.Clusters = append(s.Clusters, c.Cluster)
	}
	return s
}

func TestAssign(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
		podCPU   string
		clusters []framework.ScoredCluster
		want     map[string]int32
		// wantNote is the start of the only reason; empty means none.
		wantNote string
	}{
		{
			name:     "no preference does not apply",
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b")},
		},
		{
			name:     "no cluster preferences split equally, remainders by name",
			spec:     spec(10, true, nil),
			clusters: []framework.ScoredCluster{cluster("c"), cluster("a"), cluster("b")},
			want:     map[string]int32{"a": 4, "b": 3, "c": 3},
		},
		{
			name:     "weights 2:3",
			spec:     spec(10, true, prefs{"a": weight(2), "b": weight(3)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b")},
			want:     map[string]int32{"a": 4, "b": 6},
		},
		{
			name:     "huge weights do not overflow",
			spec:     spec(3, true, prefs{"*": weight(math.MaxInt64)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b")},
			want:     map[string]int32{"a": 2, "b": 1},
		},
		{
			name:     "a named cluster overrides the * default",
			spec:     spec(8, true, prefs{"*": weight(1), "c": weight(2)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c")},
			want:     map[string]int32{"a": 2, "b": 2, "c": 4},
		},
		{
			name:     "a cluster neither named nor covered by * gets none",
			spec:     spec(10, true, prefs{"a": weight(1), "b": weight(1)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c", running(3))},
			want:     map[string]int32{"a": 5, "b": 5, "c": 0},
		},
		{
			name:     "minReplicas come before weights",
			spec:     spec(10, true, prefs{"a": {MinReplicas: 6, Weight: 1}, "b": weight(1)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b")},
			want:     map[string]int32{"a": 8, "b": 2},
		},
		{
			name: "minimums adding up to more than the total go to the heaviest first",
			spec: spec(10, true, prefs{"a": {MinReplicas: 4, Weight: 1}, "b": {MinReplicas: 4, Weight: 3},
				"c": {MinReplicas: 4, Weight: 2}}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c")},
			want:     map[string]int32{"a": 2, "b": 4, "c": 4},
		},
		{
			name:     "maxReplicas caps a cluster and the others take the rest",
			spec:     spec(10, true, prefs{"a": {MaxReplicas: new(int64(2)), Weight: 1}, "*": weight(1)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c")},
			want:     map[string]int32{"a": 2, "b": 4, "c": 4},
		},
		{
			name:     "free capacity caps a cluster",
			spec:     spec(6, true, nil),
			podCPU:   "500m",
			clusters: []framework.ScoredCluster{cluster("a", freeCPU("1")), cluster("b")},
			want:     map[string]int32{"a": 2, "b": 4},
		},
		{
			name:     "the measured room caps a cluster, whatever it ran before",
			spec:     spec(10, true, nil),
			podCPU:   "500m",
			clusters: []framework.ScoredCluster{cluster("a", running(4), freeCPU("1")), cluster("b", running(2))},
			want:     map[string]int32{"a": 2, "b": 8},
		},
		{
			name:   "a capacity that does not limit the pods' requests is unlimited",
			spec:   spec(10, true, nil),
			podCPU: "500m",
			clusters: []framework.ScoredCluster{cluster("a", running(3), freeMemory("1Gi")),
				cluster("b", running(7))},
			want: map[string]int32{"a": 5, "b": 5},
		},
		{
			name: "rebalance moves replicas off a cluster that is not Ready",
			spec: spec(10, true, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(5), notReady), cluster("b", running(5)),
				cluster("c")},
			want: map[string]int32{"a": 0, "b": 5, "c": 5},
		},
		{
			name: "without rebalance a cluster that is not Ready keeps its replicas",
			spec: spec(10, false, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(4), notReady), cluster("b"),
				cluster("c")},
			want: map[string]int32{"a": 4, "b": 3, "c": 3},
		},
		{
			name:     "without rebalance a first division follows the weights",
			spec:     spec(10, false, prefs{"a": weight(2), "b": weight(3)}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b")},
			want:     map[string]int32{"a": 4, "b": 6},
		},
		{
			name:     "without rebalance an uneven division is kept",
			spec:     spec(10, false, prefs{"a": weight(2), "b": weight(3)}),
			clusters: []framework.ScoredCluster{cluster("a", running(7)), cluster("b", running(3))},
			want:     map[string]int32{"a": 7, "b": 3},
		},
		{
			name:     "without rebalance scaling up adds where the division falls short",
			spec:     spec(15, false, prefs{"a": weight(2), "b": weight(3)}),
			clusters: []framework.ScoredCluster{cluster("a", running(7)), cluster("b", running(3))},
			want:     map[string]int32{"a": 7, "b": 8},
		},
		{
			name:     "without rebalance scaling up from the preferred division keeps it",
			spec:     spec(15, false, prefs{"a": weight(2), "b": weight(3)}),
			clusters: []framework.ScoredCluster{cluster("a", running(4)), cluster("b", running(6))},
			want:     map[string]int32{"a": 6, "b": 9},
		},
		{
			name:     "without rebalance scaling down removes where the division is exceeded",
			spec:     spec(6, false, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(4)), cluster("b", running(6))},
			want:     map[string]int32{"a": 3, "b": 3},
		},
		{
			name:     "without rebalance scaling down spares a cluster that is not Ready",
			spec:     spec(5, false, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(4), notReady), cluster("b", running(6))},
			want:     map[string]int32{"a": 4, "b": 1},
		},
		{
			name:     "without rebalance a cluster that is not Ready loses replicas last",
			spec:     spec(3, false, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(4), notReady), cluster("b", running(6))},
			want:     map[string]int32{"a": 3, "b": 0},
		},
		{
			name:     "without rebalance a new maxReplicas takes replicas away",
			spec:     spec(10, false, prefs{"a": {MaxReplicas: new(int64(2)), Weight: 1}, "*": weight(1)}),
			clusters: []framework.ScoredCluster{cluster("a", running(5)), cluster("b", running(5))},
			want:     map[string]int32{"a": 2, "b": 8},
		},
		{
			name:     "replicas that fit nowhere are left out with a note",
			spec:     spec(10, true, prefs{"a": {MaxReplicas: new(int64(3)), Weight: 1}, "b": {MaxReplicas: new(int64(4)), Weight: 1}, "c": {}}),
			clusters: []framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c"), cluster("d")},
			want:     map[string]int32{"a": 3, "b": 4, "c": 0, "d": 0},
			wantNote: "3 of 10 replicas fit in no cluster: no Ready cluster can take more: a (maxReplicas is 3), b (maxReplicas is 4), c (weight is 0), and 1 more",
		},
		{
			name:     "without rebalance replicas that fit nowhere are left out with a note",
			spec:     spec(10, false, nil),
			podCPU:   "1",
			clusters: []framework.ScoredCluster{cluster("a", running(2), freeCPU("3")), cluster("b", freeCPU("4"))},
			want:     map[string]int32{"a": 3, "b": 4},
			wantNote: "3 of 10 replicas fit in no cluster: no Ready cluster can take more: a (capacity is 3 replicas), b (capacity is 4 replicas)",
		},
		{
			name:     "no Ready cluster",
			spec:     spec(5, true, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(5), notReady)},
			want:     map[string]int32{"a": 0},
			wantNote: "5 of 5 replicas fit in no cluster: no selected cluster is Ready",
		},
		{
			name:     "no cluster selected",
			spec:     spec(5, true, nil),
			want:     map[string]int32{},
			wantNote: "5 of 5 replicas fit in no cluster: no cluster is selected",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, res := New().(*Plugin).Assign(state(tc.spec, tc.podCPU, tc.clusters), tc.clusters)
			if !maps.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("Assign() = %v, want %v", got, tc.want)
			}
			if res.Code != framework.Success {
				t.Errorf("Assign() code = %v, want Success", res.Code)
			}
			var note string
			if len(res.Reasons) > 0 {
				note = strings.Join(res.Reasons, "; ")
			}
			if note != tc.wantNote {
				t.Errorf("Assign() note = %q, want %q", note, tc.wantNote)
			}
		})
	}
}

// TestAssignIsStable feeds each result back as the last decision: nothing
// should move.
func TestAssignIsStable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
		clusters []framework.ScoredCluster
	}{
		{"weights without rebalance", spec(10, false, prefs{"a": weight(2), "b": weight(3)}),
			[]framework.ScoredCluster{cluster("a"), cluster("b")}},
		{"weights with rebalance", spec(17, true, prefs{"a": weight(2), "b": weight(3), "*": weight(1)}),
			[]framework.ScoredCluster{cluster("a"), cluster("b"), cluster("c")}},
		{"a cluster that is not Ready", spec(12, false, nil),
			[]framework.ScoredCluster{cluster("a", running(5), notReady), cluster("b"), cluster("c")}},
		{"uneven start", spec(9, false, prefs{"*": {MinReplicas: 1, Weight: 1}}),
			[]framework.ScoredCluster{cluster("a", running(8)), cluster("b"), cluster("c", running(4))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first, _ := (&Plugin{}).Assign(state(tc.spec, "", tc.clusters), tc.clusters)
			for _, c := range tc.clusters {
				running(first[c.Name])(c.Cluster)
			}
			second, _ := (&Plugin{}).Assign(state(tc.spec, "", tc.clusters), tc.clusters)
			if !maps.Equal(first, second) {
				t.Errorf("fed back %v, Assign() = %v", first, second)
			}
		})
	}
}

// TestAssignInvariants checks random inputs: every selected cluster gets an
// entry, no Ready cluster exceeds its maxReplicas, the total is never
// exceeded, and the order of the selected clusters does not matter.
func TestAssignInvariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		pref, clusters := randomInput(rng)
		got, _ := (&Plugin{}).Assign(state(pref, "", clusters), clusters)
		var sum int32
		for _, c := range clusters {
			n, ok := got[c.Name]
			if !ok {
				t.Fatalf("no entry for %s in %v", c.Name, got)
			}
			if p, named := pref.Clusters[c.Name]; named && c.Ready && p.MaxReplicas != nil && int64(n) > *p.MaxReplicas {
				t.Fatalf("%s got %d, above its maxReplicas %d", c.Name, n, *p.MaxReplicas)
			}
			sum += n
		}
		if sum > pref.TotalReplicas {
			t.Fatalf("%v adds up to %d, more than %d", got, sum, pref.TotalReplicas)
		}
		shuffled := slices.Clone(clusters)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again, _ := (&Plugin{}).Assign(state(pref, "", shuffled), shuffled); !maps.Equal(got, again) {
			t.Fatalf("reordered clusters: %v, then %v", got, again)
		}
	}
}

func randomInput(rng *rand.Rand) (*schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, []framework.ScoredCluster) {
	pref := spec(rng.Int32N(30), rng.IntN(2) == 0, prefs{})
	var clusters []framework.ScoredCluster
	for _, name := range []string{"a", "b", "c", "d"}[:1+rng.IntN(4)] {
		p := schedulingv1alpha1.ClusterPreferences{Weight: rng.Int64N(4), MinReplicas: rng.Int64N(3)}
		if rng.IntN(3) == 0 {
			p.MaxReplicas = new(p.MinReplicas + rng.Int64N(5))
		}
		pref.Clusters[name] = p
		var opts []option
		if rng.IntN(2) == 0 {
			opts = append(opts, running(rng.Int32N(10)))
		}
		if rng.IntN(4) == 0 {
			opts = append(opts, notReady)
		}
		clusters = append(clusters, cluster(name, opts...))
	}
	return pref, clusters
}

// TestWaterfill compares waterfill with handing out replicas one at a time.
func TestWaterfill(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		claims := make([]claim, 1+rng.IntN(5))
		for i := range claims {
			claims[i] = claim{key: rng.Int64N(21) - 10, room: 1 + rng.Int64N(10)}
		}
		n := rng.Int64N(40)
		if got, want := waterfill(claims, n), oneAtATime(claims, n); !slices.Equal(got, want) {
			t.Fatalf("waterfill(%v, %d) = %v, want %v", claims, n, got, want)
		}
	}
}

func oneAtATime(claims []claim, n int64) []int64 {
	got := make([]int64, len(claims))
	for ; n > 0; n-- {
		best := -1
		for i, c := range claims {
			if got[i] < c.room && (best < 0 || c.key-got[i] > claims[best].key-got[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		got[best]++
	}
	return got
}
