// Package poll holds Eventually, the one wait of Fedwarden's tests: it looks
// at a condition until it holds, and fails the test with what the condition
// last saw when it still does not after a timeout. It imports only the
// standard library, so that every test can use it without an import
// cycle: the end-to-end, chaos, helm and bench tests, test/fedtest's Bed,
// internal/inprocess, and the in-package tests of internal/localfed.
package poll

import (
	"context"
	"testing"
	"time"
)

// Interval is the time between two looks of Eventually.
const Interval = 200 * time.Millisecond

// Eventually calls cond every Interval until it returns true, and fails
// the test with what cond last said when timeout passes first, or when the
// test's context ends. cond gets the test's context, not one bounded by
// timeout: a request in flight at the deadline still says what it saw.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, seen := cond(t.Context())
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still waiting for %s; last seen: %s", timeout, what, seen)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s; last seen: %s", what, seen)
		case <-time.After(Interval):
		}
	}
}

// NoError adapts a condition that holds when it returns no error, and
// otherwise says why not, for Eventually.
func NoError(cond func(ctx context.Context) error) func(ctx context.Context) (bool, string) {
	return func(ctx context.Context) (bool, string) {
		if err := cond(ctx); err != nil {
			return false, err.Error()
		}
		return true, ""
	}
}

// True adapts a condition that says only whether it holds, for Eventually.
func True(cond func() bool) func(ctx context.Context) (bool, string) {
	return func(context.Context) (bool, string) {
		if cond() {
			return true, ""
		}
		return false, "not yet"
	}
}
