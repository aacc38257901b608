package inprocess

import (
	"context"
	"testing"
	"time"
)

// pollInterval is the time between two looks of Eventually.
const pollInterval = 200 * time.Millisecond

// Eventually looks at cond until it holds, and fails the test with what
// cond last saw when it still does not after timeout. cond returns whether
// it holds, and what it saw.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	for {
		ok, seen := cond(ctx)
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waited %s for %s; last seen: %s", timeout, what, seen)
		case <-time.After(pollInterval):
		}
	}
}
