package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// leaderStatus is the series that says 1 on the controller-manager that
// holds the leader-election Lease and 0 on one that waits for it.
const leaderStatus = `leader_election_master_status{name="fedwarden-controller-manager"}`

// Two controller-managers elect a leader; the leader is killed with
// SIGKILL (its Lease is not released) while 100 FederatedConfigMaps on two
// members are each changed twice. The other takes the Lease when it
// expires, and finishes: nothing lost or orphaned, everything at the new
// version, and no copy written more than once per change — the
// bound docs/testing.md documents.
func TestLeaderKilledDuringABulkUpdate(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startBed(t, 2)
	first := b.cm
	b.startControllerManager()
	second := b.cm
	ns := b.namespace("failover")
	l := b.ledger(ns)
	const resources = 100
	s := &stream{b: b, namespace: ns}
	for _, m := range b.Members {
		s.clusters = append(s.clusters, m.Name)
	}
	for i := range resources {
		s.names = append(s.names, fmt.Sprintf("stream-%02d", i))
	}
	if err := createAll(t.Context(), b.host, s.objects(), 8); err != nil {
		t.Fatal(err)
	}
	b.waitClean(l, 3*time.Minute+loadSlack)

	var leader, survivor *fedtest.ControllerManager
	poll.Eventually(t, time.Minute, "exactly one leader", func(ctx context.Context) (bool, string) {
		v1, _, err1 := first.Metric(ctx, leaderStatus)
		v2, _, err2 := second.Metric(ctx, leaderStatus)
		switch {
		case err1 != nil || err2 != nil:
			return false, fmt.Sprint(err1, err2)
		case v1 == 1 && v2 == 0:
			leader, survivor = first, second
		case v1 == 0 && v2 == 1:
			leader, survivor = second, first
		default:
			return false, fmt.Sprintf("leader status %v and %v", v1, v2)
		}
		return true, ""
	})
	// The bed stops the survivor when the test ends; the leader is killed.
	b.cm = survivor

	writes := b.watchWrites(ns)
	total := resources * len(s.clusters)
	updated := make(chan error, 1)
	start := time.Now()
	go func() {
		// Two changes of each resource, one after the other.
		updated <- s.run(t.Context(), 1, 1+2*resources, time.Millisecond)
	}()
	poll.Eventually(t, 2*time.Minute+loadSlack, fmt.Sprintf("%d of %d copies updated", total/3, total), func(context.Context) (bool, string) {
		w, _ := writes.Count()
		n := 0
		for _, v := range w {
			n += v
		}
		return n >= total/3, fmt.Sprintf("%d copies updated", n)
	})
	before, _ := writes.Count()
	leader.Kill()
	killed := time.Now()
	t.Logf("leader killed %s into the update, after %v writes", killed.Sub(start).Round(time.Millisecond), before)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, time.Minute+loadSlack, "the survivor to lead", func(ctx context.Context) (bool, string) {
		v, _, err := survivor.Metric(ctx, leaderStatus)
		return err == nil && v == 1, fmt.Sprint(v, err)
	})
	took := time.Since(killed)
	report, converged := b.waitClean(l, 3*time.Minute+loadSlack)
	t.Logf("the survivor led %s after the kill, and converged %s later: %s", took.Round(time.Millisecond), converged.Round(time.Millisecond), report)
	// Each resource changed twice: at most two writes per copy.
	extra, offenders := writes.Beyond(func(string, string) int { return 2 })
	w, _ := writes.Count()
	t.Logf("member writes seen by watches: %v for %d changes per member; beyond one per change: %d", w, 2*resources, extra)
	if extra > 0 {
		t.Errorf("%d writes beyond one per change across the failover: %v", extra, offenders)
	}
	if dups := writes.Duplicates(); len(dups) > 0 {
		t.Errorf("%d writes applied what the copy already had: %v", len(dups), dups)
	}
}
