package replicadivision

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// Name is the plugin's name in the registry.
const Name = "ReplicaDivision"

// anyCluster is the spec.clusters key of every cluster not named.
const anyCluster = "*"

// notInSpec is the limit of a cluster that spec.clusters leaves out.
const notInSpec = "not in spec.clusters"

// maxLimitsShown bounds the clusters listed in a note.
const maxLimitsShown = 3

// Plugin divides the replicas of a ReplicaSchedulingPreference.
type Plugin struct{}

var _ framework.AssignPlugin = (*Plugin)(nil)

// New returns the ReplicaDivision plugin.
func New() framework.Plugin { return &Plugin{} }

// Name returns Name.
func (*Plugin) Name() string { return Name }

// Assign gives every selected cluster its share of the preference's
// TotalReplicas. Without a preference it does not apply. Replicas that fit
// in no cluster are left out, and a note says why. When replicas are left
// and no selected cluster has a weight, it decides nothing (Unschedulable).
func (*Plugin) Assign(s *framework.State, selected []framework.ScoredCluster) (map[string]int32, framework.Result) {
	spec := s.Workload.Preference
	if spec == nil {
		return nil, framework.OK()
	}
	ts := targets(s.Workload, selected)
	total := int64(max(spec.TotalReplicas, 0))
	counts := preferred(ts, total)
	if !spec.Rebalance {
		counts = keepRunning(ts, counts, total)
	}
	out := make(map[string]int32, len(ts))
	var placed int64
	for i, t := range ts {
		if t.failedOver {
			// Its copy keeps the replicas it ran, unwritten; the others
			// run them meanwhile.
			out[t.name] = int32(t.prev)
			continue
		}
		out[t.name] = int32(counts[i])
		placed += counts[i]
	}
	if placed >= total {
		return out, framework.OK()
	}
	if len(ts) > 0 && !slices.ContainsFunc(ts, func(t target) bool { return t.weight > 0 }) {
		// Bad input, not a lack of room: decide nothing, so that the
		// caller keeps the last decision instead of scaling copies down.
		return nil, framework.RuleOut("%d of %d replicas cannot be divided: the weights of the selected clusters add up to 0 (%s); give a cluster a weight, or minReplicas that add up to totalReplicas",
			total-placed, total, weightless(ts))
	}
	note := fmt.Sprintf("%d of %d replicas fit in no cluster: %s", total-placed, total, whyFull(ts, counts))
	return out, framework.Result{Code: framework.Success, Reasons: []string{note}}
}

// target is one selected cluster as the division sees it.
type target struct {
	name   string
	ready  bool
	weight int64
	min    int64
	// bound is the most replicas the cluster may run, math.MaxInt64 when
	// nothing limits it; limit says what sets it.
	bound int64
	limit string
	// prev is how many replicas the last decision gave the cluster.
	prev int64
	// failedOver tells that the cluster failed under the failover policy:
	// it counts as not Ready and running none, and keeps prev.
	failedOver bool
}

// targets describes the selected clusters, sorted by name so that every
// tie below goes to the first name.
func targets(w *framework.Workload, selected []framework.ScoredCluster) []target {
	ts := make([]target, 0, len(selected))
	for _, c := range selected {
		p, ok := preferences(w.Preference, c.Name)
		t := target{name: c.Name, ready: c.Ready && !c.FailedOver, prev: max(c.PreviousReplicas(w), 0), failedOver: c.FailedOver}
		if ok {
			t.weight, t.min = max(p.Weight, 0), max(p.MinReplicas, 0)
		}
		t.bound, t.limit = upperBound(w, c.Cluster, p, ok)
		ts = append(ts, t)
	}
	slices.SortFunc(ts, func(a, b target) int { return cmp.Compare(a.name, b.name) })
	return ts
}

// preferences are the cluster's entry in spec.clusters, else the "*" entry;
// ok is false when it has neither. Without entries every cluster weighs 1.
func preferences(spec *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec, name string) (schedulingv1alpha1.ClusterPreferences, bool) {
	if len(spec.Clusters) == 0 {
		return schedulingv1alpha1.ClusterPreferences{Weight: 1}, true
	}
	if p, ok := spec.Clusters[name]; ok {
		return p, true
	}
	p, ok := spec.Clusters[anyCluster]
	return p, ok
}

// upperBound is the most replicas c may run, and what sets that: its
// maxReplicas, or its free capacity (which counts the room the workload's
// own pods hold there).
func upperBound(w *framework.Workload, c *framework.Cluster, p schedulingv1alpha1.ClusterPreferences, ok bool) (int64, string) {
	if !ok {
		return 0, notInSpec
	}
	bound, limit := int64(math.MaxInt64), ""
	if p.MaxReplicas != nil {
		bound = max(*p.MaxReplicas, 0)
		limit = fmt.Sprintf("maxReplicas is %d", bound)
	}
	if c.Capacity == nil {
		return bound, limit
	}
	room := c.Capacity.MaxPods(w.PodRequests)
	if room < bound {
		return room, fmt.Sprintf("capacity is %d replicas", room)
	}
	return bound, limit
}

// preferred divides total between the Ready targets: minReplicas first,
// then the rest by weight. Targets that are not Ready get 0.
func preferred(ts []target, total int64) []int64 {
	p := make([]int64, len(ts))
	left := giveMins(ts, p, total)
	divideByWeight(ts, p, left)
	return p
}

// giveMins gives each Ready target its minReplicas, within its bound, and
// returns what is left of total. When the minimums add up to more than
// total, the heaviest targets get theirs first.
func giveMins(ts []target, p []int64, total int64) int64 {
	left := total
	for _, i := range byWeight(ts) {
		if !ts[i].ready {
			continue
		}
		p[i] = min(ts[i].min, ts[i].bound, left)
		left -= p[i]
	}
	return left
}

// divideByWeight shares left between the Ready targets that have a weight
// and room below their bound. What a target cannot take goes round again
// to the others, until none is left or none has room.
func divideByWeight(ts []target, p []int64, left int64) {
	for left > 0 {
		var open []int
		var weights []int64
		for i, t := range ts {
			if t.ready && t.weight > 0 && p[i] < t.bound {
				open = append(open, i)
				weights = append(weights, t.weight)
			}
		}
		if len(open) == 0 {
			break
		}
		shares := largestRemainder(left, weights)
		left = 0
		for k, i := range open {
			give := min(shares[k], ts[i].bound-p[i])
			p[i] += give
			left += shares[k] - give
		}
	}
}

// largestRemainder splits n in proportion to weights (which add up to more
// than 0): each gets the whole part of its share, and what is left goes one
// each to the largest fractional parts, ties to the first. It computes with
// big integers, as weights may be as large as int64 allows.
func largestRemainder(n int64, weights []int64) []int64 {
	sum := new(big.Int)
	for _, w := range weights {
		sum.Add(sum, big.NewInt(w))
	}
	shares := make([]int64, len(weights))
	fractions := make([]*big.Int, len(weights))
	left := n
	for i, w := range weights {
		q, r := new(big.Int).QuoRem(new(big.Int).Mul(big.NewInt(n), big.NewInt(w)), sum, new(big.Int))
		shares[i], fractions[i] = q.Int64(), r
		left -= shares[i]
	}
	order := make([]int, len(weights))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return fractions[b].Cmp(fractions[a]) })
	for _, i := range order[:left] {
		shares[i]++
	}
	return shares
}

// byWeight returns the indexes of ts, heaviest first, then by name.
func byWeight(ts []target) []int {
	order := make([]int, len(ts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ts[b].weight, ts[a].weight) })
	return order
}

// keepRunning moves no running replica: it starts from the last decision
// and only adds replicas to, or removes them from, the targets furthest
// from the preferred division p. Targets that are not Ready keep theirs
// unless every Ready target is already at 0.
func keepRunning(ts []target, p []int64, total int64) []int64 {
	cur := make([]int64, len(ts))
	var sum int64
	for i, t := range ts {
		cur[i] = t.prev
		switch {
		case t.failedOver:
			cur[i] = 0 // the others run its replicas
		case t.ready:
			cur[i] = min(t.prev, t.bound)
		}
		sum += cur[i]
	}
	switch {
	case sum < total:
		scaleUp(ts, p, cur, total-sum)
	case sum > total:
		n := sum - total
		n -= scaleDown(ts, p, cur, n, true)
		scaleDown(ts, p, cur, n, false)
	}
	return cur
}

// scaleUp adds up to n replicas to the Ready targets, each to the one
// furthest below its preferred count, ties to the heavier then the first.
// A target with a weight takes replicas up to its bound; one without a
// weight only up to its preferred count.
func scaleUp(ts []target, p, cur []int64, n int64) {
	var ids []int
	var claims []claim
	for _, i := range byWeight(ts) {
		t := ts[i]
		room := t.bound - cur[i]
		if t.weight == 0 {
			room = p[i] - cur[i]
		}
		if t.ready && room > 0 {
			ids = append(ids, i)
			claims = append(claims, claim{key: p[i] - cur[i], room: room})
		}
	}
	for k, got := range waterfill(claims, n) {
		cur[ids[k]] += got
	}
}

// scaleDown removes up to n replicas from the targets whose readiness is
// ready, each from the one furthest above its preferred count, ties to the
// first; it returns how many it removed.
func scaleDown(ts []target, p, cur []int64, n int64, ready bool) int64 {
	var ids []int
	var claims []claim
	for i, t := range ts {
		if t.ready == ready && cur[i] > 0 {
			ids = append(ids, i)
			claims = append(claims, claim{key: cur[i] - p[i], room: cur[i]})
		}
	}
	var removed int64
	for k, got := range waterfill(claims, n) {
		cur[ids[k]] -= got
		removed += got
	}
	return removed
}

// claim is one target's part in a waterfill: key is how far it is from
// its preferred count, room how many replicas it can take or give.
type claim struct {
	key, room int64
}

// waterfill hands out n replicas as if one at a time, each to the claim
// with the largest key, whose key then drops by one; ties go to the first
// claim, and no claim takes more than its room. It returns how many each
// claim took: min(n, total room) in all. It works level by level, so its
// cost does not grow with n.
func waterfill(claims []claim, n int64) []int64 {
	claims = slices.Clone(claims)
	got := make([]int64, len(claims))
	var room int64
	for i := range claims {
		claims[i].room = min(claims[i].room, n)
		got[i] = claims[i].room
		room += claims[i].room
	}
	if room <= n {
		return got
	}
	level := waterLevel(claims, n)
	left := n
	for i, c := range claims {
		got[i] = min(c.room, max(0, c.key-level))
		left -= got[i]
	}
	for i, c := range claims {
		if left > 0 && c.key >= level && c.key-c.room < level {
			got[i]++
			left--
		}
	}
	return got
}

// waterLevel is the lowest key any replica is handed out at: the highest
// level at which the claims could take n replicas or more. The claims
// (rooms at most n) must have more than n room in all.
func waterLevel(claims []claim, n int64) int64 {
	taken := func(level int64) int64 {
		var sum int64
		for _, c := range claims {
			sum += min(c.room, max(0, c.key-level+1))
		}
		return sum
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, c := range claims {
		lo = min(lo, c.key-c.room+1)
		hi = max(hi, c.key+1)
	}
	for lo+1 < hi {
		mid := lo + (hi-lo)/2
		if taken(mid) >= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// whyFull says why the Ready targets took no more replicas.
func whyFull(ts []target, counts []int64) string {
	if len(ts) == 0 {
		return "no cluster is selected"
	}
	var limits []string
	for i, t := range ts {
		if !t.ready {
			continue
		}
		why := t.limit
		if counts[i] < t.bound {
			why = "weight is 0"
		}
		limits = append(limits, t.name+" ("+why+")")
	}
	switch {
	case len(limits) == 0:
		return "no selected cluster is Ready"
	case len(limits) > maxLimitsShown:
		more := len(limits) - maxLimitsShown
		limits = append(limits[:maxLimitsShown], fmt.Sprintf("and %d more", more))
	}
	return "no Ready cluster can take more: " + strings.Join(limits, ", ")
}

// weightless names the clusters of ts and why each has no weight.
func weightless(ts []target) string {
	var out []string
	for _, t := range ts {
		why := "weight 0"
		if t.limit == notInSpec {
			why = t.limit
		}
		out = append(out, t.name+": "+why)
	}
	if len(out) > maxLimitsShown {
		more := len(out) - maxLimitsShown
		out = append(out[:maxLimitsShown], fmt.Sprintf("and %d more", more))
	}
	return strings.Join(out, ", ")
}
