package chaos

import (
	"context"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// outage is how long the member's API server stays down.
const outage = 30 * time.Second

// A member's API server is down for 30 s while 120 template and override
// changes are made to ten FederatedConfigMaps placed on three members. The
// other two keep up (their latencies are logged, and bounded only
// loosely), the down member turns not Ready within its probe settings, and
// once back it converges with one write per resource, not one per change
// it missed.
func TestAMemberDownDuringAStreamOfUpdates(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startBed(t, 3)
	ns := b.namespace("outage")
	l := b.ledger(ns)
	writes := b.watchWrites(ns)
	const resources, before, during = 10, 20, 100
	s := newStream(t, b, ns, resources)
	b.waitClean(l, 2*time.Minute+loadSlack)
	down := b.Members[2]

	// Twenty changes with every member up, then the member goes down and a
	// hundred more are made over most of the outage.
	if err := s.run(t.Context(), 1, 1+before, 250*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	streamed := make(chan error, 1)
	go func() { streamed <- s.run(t.Context(), 1+before, 1+before+during, (outage-5*time.Second)/during) }()
	poll.Eventually(t, offlineWithin(), down.Name+" to be not Ready", func(ctx context.Context) (bool, string) {
		st, err := b.readyStatus(ctx, down.Name)
		if err != nil {
			return false, err.Error()
		}
		return st == "False", "Ready=" + st
	})
	offline := time.Since(killed)
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
	appliesDown := b.applies(t, down.Name)
	if wait := outage - time.Since(killed); wait > 0 {
		// The outage lasts its length: this is the fault, not a guess.
		time.Sleep(wait)
	}
	if err := down.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	report, took := b.waitClean(l, 2*time.Minute+loadSlack)
	t.Logf("%s was down %s; not Ready after %s (threshold: %d probes, %s apart); converged %s after it was back: %s",
		down.Name, restarted.Sub(killed).Round(time.Millisecond), offline.Round(time.Millisecond), probes.FailureThreshold, probes.ProbePeriod, took.Round(time.Millisecond), report)

	for _, m := range b.Members[:2] {
		lat, missing := s.latencies(writes, m.Name, 1, 1+before+during)
		t.Logf("%s: latency of %d changes: %s", m.Name, before+during, summary(lat))
		if len(missing) > 0 {
			t.Errorf("%s never saw changes %v", m.Name, missing)
		}
		// Loose, for a loaded machine: a member that is up is not held
		// back by the one that is down for as long as the outage.
		if len(lat) > 0 {
			if p95 := fedtest.Percentile(lat, 0.95); p95 > outage {
				t.Errorf("%s: 95%% of the changes took up to %s, longer than the outage of the other member", m.Name, p95)
			}
		}
	}
	// Once back: one write per resource, whatever it missed.
	caughtUp := b.applies(t, down.Name) - appliesDown
	t.Logf("%s: %v apply writes to catch up on %d changes to %d resources", down.Name, caughtUp, during, resources)
	if caughtUp > resources {
		t.Errorf("%s got %v writes to catch up on %d resources, want at most one per resource", down.Name, caughtUp, resources)
	}
	// The members that stayed up: at most one write per change.
	for _, m := range b.Members[:2] {
		n := 0
		for _, name := range s.names {
			n += len(writes.Of(m.Name, name))
		}
		t.Logf("%s: %d writes for %d changes (and %d creates)", m.Name, n-resources, before+during, resources)
		if n > resources+before+during {
			t.Errorf("%s got %d writes for %d creates and %d changes", m.Name, n, resources, before+during)
		}
	}
	if dups := writes.Duplicates(); len(dups) > 0 {
		t.Errorf("%d writes applied what the copy already had: %v", len(dups), dups)
	}
}
