package capacity

import (
	"math"
	"math/bits"

	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// Name of the plugin.
const Name = "Capacity"

// Plugin is the Capacity filter and score.
type Plugin struct{}

var (
	_ framework.FilterPlugin = (*Plugin)(nil)
	_ framework.ScorePlugin  = (*Plugin)(nil)
)

// New returns the plugin.
func New() framework.Plugin { return &Plugin{} }

// Name returns the plugin's name.
func (*Plugin) Name() string { return Name }

// Filter rules out a cluster that lacks the room for the workload's pods
// (see podsNeeded).
func (*Plugin) Filter(s *framework.State, c *framework.Cluster) framework.Result {
	w := s.Workload
	if c.Capacity == nil || (w.Replicas == nil && w.Preference == nil) {
		return framework.OK()
	}
	if ok, short := c.Capacity.Fit(w.PodRequests, podsNeeded(w)); !ok {
		return framework.RuleOut("%s", short)
	}
	return framework.OK()
}

// podsNeeded is how many pods the cluster must find room for: with a
// ReplicaSchedulingPreference, which divides the replicas by capacity
// itself, one; otherwise the template's replicas. The room the workload's
// own pods hold there already counts as free (see framework.Capacity).
func podsNeeded(w *framework.Workload) int64 {
	if w.Preference != nil {
		return 1
	}
	return int64(*w.Replicas)
}

// Score ranks a cluster by how many more pods of the workload fit there,
// against the cluster of s.Clusters where most fit: MaxScore for the
// roomiest, or when nothing limits the pods; half of it when the capacity
// is not measured. Clusters where nothing limits the pods do not count as
// the roomiest, so that they do not flatten the others' scores.
func (*Plugin) Score(s *framework.State, c *framework.Cluster) (int64, framework.Result) {
	if c.Capacity == nil {
		return framework.MaxScore / 2, framework.OK()
	}
	n := c.Capacity.MaxPods(s.Workload.PodRequests)
	if n == math.MaxInt64 {
		return framework.MaxScore, framework.OK()
	}
	most := roomiest(s)
	if most == 0 {
		return 0, framework.OK()
	}
	return scale(min(n, most), most), framework.OK()
}

// roomiest is the most pods that fit in any measured cluster of s where
// something limits them, computed once per decision.
func roomiest(s *framework.State) int64 {
	return s.Memo(Name+"/roomiest", func() any { return computeRoomiest(s) }).(int64)
}

func computeRoomiest(s *framework.State) int64 {
	var most int64
	for _, c := range s.Clusters {
		if c.Capacity == nil {
			continue
		}
		if n := c.Capacity.MaxPods(s.Workload.PodRequests); n != math.MaxInt64 {
			most = max(most, n)
		}
	}
	return most
}

// scale is n*MaxScore/most, rounded down, without overflow; 0 ≤ n ≤ most.
func scale(n, most int64) int64 {
	hi, lo := bits.Mul64(uint64(n), framework.MaxScore)
	q, _ := bits.Div64(hi, lo, uint64(most))
	return int64(q)
}
