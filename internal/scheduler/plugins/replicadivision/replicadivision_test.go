package replicadivision

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
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

func failedOver(c *framework.Cluster) { c.FailedOver = true }

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
			name:     "a failed-over cluster keeps its count, and the others run its share within maxReplicas",
			spec:     spec(6, false, prefs{"*": weight(1), "b": {Weight: 1, MaxReplicas: new(int64(3))}}),
			clusters: []framework.ScoredCluster{cluster("a", running(2)), cluster("b", running(2)), cluster("c", running(2), notReady, failedOver)},
			want:     map[string]int32{"a": 3, "b": 3, "c": 2},
		},
		{
			name:     "the share of a failed-over cluster beyond the others' maxReplicas is noted",
			spec:     spec(6, false, prefs{"*": {Weight: 1, MaxReplicas: new(int64(2))}}),
			clusters: []framework.ScoredCluster{cluster("a", running(2)), cluster("b", running(2)), cluster("c", running(2), notReady, failedOver)},
			want:     map[string]int32{"a": 2, "b": 2, "c": 2},
			wantNote: "2 of 6 replicas fit in no cluster: no Ready cluster can take more: a (maxReplicas is 2), b (maxReplicas is 2)",
		},
		{
			name:     "failed back: the others drain to the division",
			spec:     spec(6, false, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(3)), cluster("b", running(3)), cluster("c", running(2))},
			want:     map[string]int32{"a": 2, "b": 2, "c": 2},
		},
		{
			name:     "under rebalance a failed-over cluster keeps its count too",
			spec:     spec(6, true, nil),
			clusters: []framework.ScoredCluster{cluster("a", running(2)), cluster("b", running(2)), cluster("c", running(2), notReady, failedOver)},
			want:     map[string]int32{"a": 3, "b": 3, "c": 2},
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

// TestAssignInvariants checks random inputs against what docs/scheduling.md
// promises of the division (see checkDivision), and that the order of the
// selected clusters does not matter.
func TestAssignInvariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		pref, clusters := randomInput(rng)
		st := state(pref, podCPU, clusters)
		got, res := (&Plugin{}).Assign(st, clusters)
		if res.Code == framework.Unschedulable {
			// Only replicas left over with no weight anywhere are refused.
			if slices.ContainsFunc(expectations(st.Workload, clusters), func(e expected) bool { return e.weight > 0 }) {
				t.Fatalf("refused with a weight given: %v\ninput: %s", res, describeInput(st.Workload, clusters))
			}
			continue
		}
		if err := checkDivision(st.Workload, clusters, got); err != nil {
			t.Fatalf("%s: %v\ninput: %s", err, got, describeInput(st.Workload, clusters))
		}
		if allNew(st.Workload, clusters) && !pref.Rebalance {
			// Without running replicas, rebalance changes nothing: a first
			// division follows the weights.
			rebalanced := *pref
			rebalanced.Rebalance = true
			if want, _ := (&Plugin{}).Assign(state(&rebalanced, podCPU, clusters), clusters); !maps.Equal(got, want) {
				t.Fatalf("a first division without rebalance is %v, with rebalance %v\ninput: %s", got, want, describeInput(st.Workload, clusters))
			}
		}
		shuffled := slices.Clone(clusters)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if again, _ := (&Plugin{}).Assign(state(pref, podCPU, shuffled), shuffled); !maps.Equal(got, again) {
			t.Fatalf("reordered clusters: %v, then %v", got, again)
		}
	}
}

// podCPU is what each pod of the random workloads requests: a cluster with
// n free cores has room for n replicas.
const podCPU = "1"

// randomInput is a preference of 0 to 29 replicas over one to four
// clusters, each named in spec.clusters, or covered by "*", or by neither;
// some run replicas, some are not Ready, some have a maxReplicas (at times
// below their minReplicas) or a measured capacity.
func randomInput(rng *rand.Rand) (*schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, []framework.ScoredCluster) {
	pref := spec(rng.Int32N(30), rng.IntN(2) == 0, prefs{})
	var clusters []framework.ScoredCluster
	for _, name := range []string{"a", "b", "c", "d"}[:1+rng.IntN(4)] {
		p := schedulingv1alpha1.ClusterPreferences{Weight: rng.Int64N(4), MinReplicas: rng.Int64N(4)}
		if rng.IntN(3) == 0 {
			p.MaxReplicas = new(p.MinReplicas + rng.Int64N(5) - 1)
		}
		switch _, star := pref.Clusters[anyCluster]; {
		case rng.IntN(6) > 1:
			pref.Clusters[name] = p
		case !star && rng.IntN(2) == 0:
			pref.Clusters[anyCluster] = p
		}
		var opts []option
		if rng.IntN(2) == 0 {
			opts = append(opts, running(rng.Int32N(10)))
		}
		if rng.IntN(4) == 0 {
			opts = append(opts, notReady)
		}
		if rng.IntN(4) == 0 {
			opts = append(opts, freeCPU(strconv.Itoa(rng.IntN(8))))
		}
		clusters = append(clusters, cluster(name, opts...))
	}
	return pref, clusters
}

// expected is what the docs say bounds one cluster's share, worked out from
// the input alone.
type expected struct {
	name  string
	ready bool
	// weight and min come from the cluster's entry in spec.clusters, else
	// from "*"; a cluster covered by neither has bound 0.
	weight, min int64
	// bound is the least of its maxReplicas and the replicas its free
	// capacity holds, math.MaxInt64 when neither limits it.
	bound int64
	// prev is how many replicas the last decision gave it.
	prev int64
}

func expectations(w *framework.Workload, clusters []framework.ScoredCluster) []expected {
	var out []expected
	for _, c := range clusters {
		e := expected{name: c.Name, ready: c.Ready, bound: math.MaxInt64, prev: c.PreviousReplicas(w)}
		p, ok := w.Preference.Clusters[c.Name]
		if !ok {
			p, ok = w.Preference.Clusters[anyCluster]
		}
		if len(w.Preference.Clusters) == 0 {
			p, ok = weight(1), true
		}
		switch {
		case !ok:
			e.bound = 0
		case p.MaxReplicas != nil:
			e.bound = *p.MaxReplicas
		}
		if ok {
			e.weight, e.min = p.Weight, p.MinReplicas
		}
		if c.Capacity != nil {
			e.bound = min(e.bound, c.Capacity.MaxPods(w.PodRequests))
		}
		e.bound = max(e.bound, 0)
		out = append(out, e)
	}
	return out
}

// minimum is the share minReplicas promises: its minReplicas, within its
// bound.
func (e expected) minimum() int64 { return min(e.min, e.bound) }

// start is what a division without rebalance starts from: the replicas of
// the last decision, within the bound of a Ready cluster.
func (e expected) start() int64 {
	if e.ready {
		return min(e.prev, e.bound)
	}
	return e.prev
}

// most is the most replicas the cluster can be given: a Ready one with a
// weight up to its bound, one without a weight only its minReplicas (or
// what it runs already, without rebalance), and one not Ready none (or
// what it runs already, without rebalance).
func (e expected) most(rebalance bool) int64 {
	switch {
	case !e.ready && rebalance:
		return 0
	case !e.ready:
		return e.prev
	case e.weight > 0:
		return e.bound
	case rebalance:
		return e.minimum()
	default:
		return max(e.start(), e.minimum())
	}
}

// checkDivision says how got breaks what docs/scheduling.md promises, or
// returns nil:
//   - every selected cluster has an entry, and no other cluster does;
//   - no cluster gets more than it can take (most: maxReplicas, capacity,
//     not covered by spec.clusters, no weight, not Ready);
//   - the shares add up to totalReplicas, or to all the clusters can take
//     when that is less;
//   - with rebalance, a cluster that is not Ready gets 0, every Ready one at
//     least its minReplicas when the minimums fit in the total, and the
//     replicas above the minimums follow the weights within one replica
//     when no cluster is held at its bound;
//   - without rebalance, no replica moves: when the replicas grow no cluster
//     loses any, when they shrink no cluster gains any, and a cluster that
//     is not Ready loses replicas only once every Ready one is at 0.
func checkDivision(w *framework.Workload, clusters []framework.ScoredCluster, got map[string]int32) error {
	pref := w.Preference
	total := int64(pref.TotalReplicas)
	es := expectations(w, clusters)
	if len(got) != len(es) {
		return fmt.Errorf("%d entries for %d selected clusters", len(got), len(es))
	}
	var sum, room, mins, start int64
	for _, e := range es {
		n, ok := got[e.name]
		if !ok {
			return fmt.Errorf("no entry for %s", e.name)
		}
		if int64(n) < 0 || int64(n) > e.most(pref.Rebalance) {
			return fmt.Errorf("%s got %d, want 0 to %d", e.name, n, e.most(pref.Rebalance))
		}
		sum += int64(n)
		room = satAdd(room, e.most(pref.Rebalance))
		start += e.start()
		if e.ready {
			mins += e.minimum()
		}
	}
	if want := min(total, room); sum != want {
		return fmt.Errorf("the shares add up to %d, want %d (total %d, room for %d)", sum, want, total, room)
	}
	if pref.Rebalance {
		return checkPreferred(es, got, total, mins)
	}
	for _, e := range es {
		n := int64(got[e.name])
		switch {
		case start <= total && n < e.start():
			return fmt.Errorf("growing from %d to %d replicas, %s went from %d to %d", start, total, e.name, e.start(), n)
		case start >= total && n > e.start():
			return fmt.Errorf("shrinking from %d to %d replicas, %s went from %d to %d", start, total, e.name, e.start(), n)
		case !e.ready && n < e.prev:
			for _, r := range es {
				if r.ready && got[r.name] > 0 {
					return fmt.Errorf("%s, not Ready, went from %d to %d while the Ready %s keeps %d", e.name, e.prev, n, r.name, got[r.name])
				}
			}
		}
	}
	return nil
}

// checkPreferred checks a division with rebalance, whose shares add up to
// what they should, against minReplicas and the weights; mins is the sum of
// the minimums of the Ready clusters.
func checkPreferred(es []expected, got map[string]int32, total, mins int64) error {
	if mins > total {
		return nil
	}
	var weights int64
	held := false
	for _, e := range es {
		n := int64(got[e.name])
		if e.ready && n < e.minimum() {
			return fmt.Errorf("%s got %d, below its minReplicas %d (bound %d)", e.name, n, e.min, e.bound)
		}
		if e.ready && e.weight > 0 {
			weights += e.weight
			held = held || n == e.bound
		}
	}
	if held || weights == 0 {
		return nil
	}
	// Each weighted share of the replicas left after the minimums is the
	// whole part of its proportion, or one more.
	left := total - mins
	for _, e := range es {
		if !e.ready || e.weight == 0 {
			continue
		}
		extra := int64(got[e.name]) - e.minimum()
		if d := extra*weights - left*e.weight; d <= -weights || d >= weights {
			return fmt.Errorf("%s got %d above its minimum, want %d*%d/%d rounded", e.name, extra, left, e.weight, weights)
		}
	}
	return nil
}

// satAdd adds two non-negative numbers, stopping at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// allNew tells whether no cluster runs replicas of the last decision.
func allNew(w *framework.Workload, clusters []framework.ScoredCluster) bool {
	for _, c := range clusters {
		if c.PreviousReplicas(w) > 0 {
			return false
		}
	}
	return true
}

// describeInput is the random input, for a failure message.
func describeInput(w *framework.Workload, clusters []framework.ScoredCluster) string {
	var b strings.Builder
	fmt.Fprintf(&b, "totalReplicas %d, rebalance %t, spec.clusters %v;", w.Preference.TotalReplicas, w.Preference.Rebalance, describePrefs(w.Preference.Clusters))
	for _, c := range clusters {
		fmt.Fprintf(&b, " %s: ready %t, previous %d", c.Name, c.Ready, c.PreviousReplicas(w))
		if c.Capacity != nil {
			fmt.Fprintf(&b, ", room for %d", c.Capacity.MaxPods(w.PodRequests))
		}
		b.WriteString(";")
	}
	return b.String()
}

func describePrefs(ps prefs) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		s := fmt.Sprintf("%s{weight %d, min %d", name, p.Weight, p.MinReplicas)
		if p.MaxReplicas != nil {
			s += fmt.Sprintf(", max %d", *p.MaxReplicas)
		}
		out = append(out, s+"}")
	}
	return strings.Join(out, " ")
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

// TestAssignRefusesZeroWeights: replicas left over when no selected
// cluster has a weight are bad input, not a lack of room: Assign decides
// nothing (so the last decision stays) and says why.
func TestAssignRefusesZeroWeights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
		clusters []framework.ScoredCluster
		want     string // "" when Assign succeeds
	}{
		{"with rebalance", spec(6, true, prefs{"a": weight(0), "b": weight(0)}),
			[]framework.ScoredCluster{cluster("a", running(3)), cluster("b", running(3))},
			"6 of 6 replicas cannot be divided: the weights of the selected clusters add up to 0 (a: weight 0, b: weight 0)"},
		{"without rebalance, more replicas", spec(10, false, prefs{"a": weight(0), "c": weight(1)}),
			[]framework.ScoredCluster{cluster("a", running(3)), cluster("b", running(3))},
			"7 of 10 replicas cannot be divided: the weights of the selected clusters add up to 0 (a: weight 0, b: not in spec.clusters)"},
		{"new clusters", spec(4, false, prefs{"*": {MinReplicas: 1}}),
			[]framework.ScoredCluster{cluster("a"), cluster("b")},
			"2 of 4 replicas cannot be divided"},
		{"the minimums cover the total", spec(4, true, prefs{"*": {MinReplicas: 2}}),
			[]framework.ScoredCluster{cluster("a"), cluster("b")}, ""},
		{"without rebalance, nothing to add", spec(6, false, prefs{"*": weight(0)}),
			[]framework.ScoredCluster{cluster("a", running(3)), cluster("b", running(3))}, ""},
		{"a total of 0", spec(0, true, prefs{"*": weight(0)}),
			[]framework.ScoredCluster{cluster("a", running(3))}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, res := (&Plugin{}).Assign(state(tc.spec, "", tc.clusters), tc.clusters)
			if tc.want == "" {
				if res.Code != framework.Success || got == nil {
					t.Errorf("Assign() = %v, %+v, want a division", got, res)
				}
				return
			}
			if res.Code != framework.Unschedulable || got != nil || len(res.Reasons) != 1 || !strings.Contains(res.Reasons[0], tc.want) {
				t.Errorf("Assign() = %v, %+v, want Unschedulable saying %q", got, res, tc.want)
			}
		})
	}
}
