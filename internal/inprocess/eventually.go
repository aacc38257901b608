package inprocess

import (
	"context"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"
)

// Eventually is poll.Eventually, the one wait of the tests, under its
// former name: the tests of internal/propagation and internal/cli/plan
// still call it, while another change rewrites them. New tests call
// poll.Eventually.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	poll.Eventually(t, timeout, what, cond)
}
