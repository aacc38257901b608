// Package failover judges, for one federated resource, which member
// clusters have failed long enough for their share of the replicas to move
// to the others, and which have been back long enough for it to return.
// It only judges: the scheduler moves the share, and no copy is written or
// deleted for a verdict (docs/safety.md). Judge is pure, so that a
// controller restarted mid-failover reaches the same verdict from what the
// clusters' conditions and the resource's record say.
package failover

import (
	"fmt"
	"slices"
	"time"
)

// Policy is a resource's failover policy.
type Policy struct {
	// Toleration is how long a cluster may be not Ready before it has
	// failed.
	Toleration time.Duration
	// FailbackAfter is how long a failed cluster must be Ready, with its
	// copy current, before its share returns.
	FailbackAfter time.Duration
	// Automatic: the share returns by itself; otherwise only on request.
	Automatic bool
	// MaxMovesPerMinute bounds how many clusters fail over in any minute;
	// 0: no bound.
	MaxMovesPerMinute int
}

// Cluster is what Judge knows of one cluster the resource is placed on.
type Cluster struct {
	Name  string
	Ready bool
	// Since is when Ready last changed: its condition's
	// lastTransitionTime. A cluster that fails again starts a new count.
	Since time.Time
	// CopyCurrent: its copy is InSync and Healthy. A share returns only
	// to a cluster whose copy is.
	CopyCurrent bool
	// FailedOver: the resource's record says its share was moved away.
	FailedOver bool
	// FailbackRequested: a user asked for its share back (fedwarden
	// failback), which Manual waits for.
	FailbackRequested bool
}

// Verdict is what to do now.
type Verdict struct {
	// Fail are the clusters whose share moves to the others now.
	Fail []string
	// Return are the clusters whose share comes back now.
	Return []string
	// Waiting says, by cluster, why it neither fails nor returns yet.
	Waiting map[string]string
	// Next is how long until a verdict may change by time alone; 0 when
	// none will.
	Next time.Duration
}

// Judge returns the verdict for clusters at now; moves are the times of
// the failovers of the last minute, which MaxMovesPerMinute bounds.
func Judge(p Policy, clusters []Cluster, moves []time.Time, now time.Time) Verdict {
	v := Verdict{Waiting: map[string]string{}}
	if !slices.ContainsFunc(clusters, func(c Cluster) bool { return c.Ready }) {
		// Nowhere to move to, and most likely the control plane's view
		// that failed rather than every cluster.
		for _, c := range clusters {
			v.Waiting[c.Name] = "every cluster the resource is placed on is not Ready: an outage of the whole fleet moves nothing"
		}
		return v
	}
	budget := movesLeft(p, moves, now)
	for _, c := range clusters {
		switch {
		case !c.Ready && !c.FailedOver:
			v.judgeFailure(p, c, moves, now, &budget)
		case c.Ready && c.FailedOver:
			v.judgeFailback(p, c, now)
		}
	}
	return v
}

// movesLeft is how many clusters may fail over now under the policy's
// bound; -1 when there is none.
func movesLeft(p Policy, moves []time.Time, now time.Time) int {
	if p.MaxMovesPerMinute <= 0 {
		return -1
	}
	recent := 0
	for _, m := range moves {
		if now.Sub(m) < time.Minute {
			recent++
		}
	}
	return max(p.MaxMovesPerMinute-recent, 0)
}

// slotFrees is how long until the oldest move of the last minute leaves
// it, freeing a move: a minute when the only ones are this verdict's.
func slotFrees(moves []time.Time, now time.Time) time.Duration {
	oldest := now
	for _, m := range moves {
		if now.Sub(m) < time.Minute && m.Before(oldest) {
			oldest = m
		}
	}
	return oldest.Add(time.Minute).Sub(now)
}

// judgeFailure judges a cluster that is not Ready and still has its share.
func (v *Verdict) judgeFailure(p Policy, c Cluster, moves []time.Time, now time.Time, budget *int) {
	if wait := c.Since.Add(p.Toleration).Sub(now); wait > 0 {
		v.Waiting[c.Name] = fmt.Sprintf("not Ready for %s of the %s tolerated", now.Sub(c.Since).Round(time.Second), p.Toleration)
		v.after(wait)
		return
	}
	if *budget == 0 {
		v.Waiting[c.Name] = fmt.Sprintf("failed, but the policy allows at most %d failovers a minute, and the minute's are taken", p.MaxMovesPerMinute)
		v.after(slotFrees(moves, now))
		return
	}
	*budget--
	v.Fail = append(v.Fail, c.Name)
}

// judgeFailback judges a failed-over cluster that is Ready again.
func (v *Verdict) judgeFailback(p Policy, c Cluster, now time.Time) {
	switch wait := c.Since.Add(p.FailbackAfter).Sub(now); {
	case wait > 0:
		v.Waiting[c.Name] = fmt.Sprintf("Ready again for %s of the %s its share waits before it returns", now.Sub(c.Since).Round(time.Second), p.FailbackAfter)
		v.after(wait)
	case !c.CopyCurrent:
		v.Waiting[c.Name] = "Ready again, but its copy is not yet InSync and Healthy"
	case !p.Automatic && !c.FailbackRequested:
		v.Waiting[c.Name] = "Ready again; failback is Manual: fedwarden failback returns its share"
	default:
		v.Return = append(v.Return, c.Name)
	}
}

// after makes Next at most d.
func (v *Verdict) after(d time.Duration) {
	if v.Next == 0 || d < v.Next {
		v.Next = d
	}
}
