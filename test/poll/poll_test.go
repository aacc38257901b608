package poll_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"
)

func TestEventuallyReturnsOnceTheConditionHolds(t *testing.T) {
	looks := 0
	poll.Eventually(t, time.Minute, "the third look", func(context.Context) (bool, string) {
		looks++
		return looks == 3, "not yet"
	})
	if looks != 3 {
		t.Fatalf("looked %d times, want 3", looks)
	}
}

func TestNoErrorSaysTheError(t *testing.T) {
	ok, seen := poll.NoError(func(context.Context) error { return errors.New("not found") })(t.Context())
	if ok || seen != "not found" {
		t.Fatalf("NoError of a failing condition = %v, %q; want false, %q", ok, seen, "not found")
	}
	if ok, _ := poll.NoError(func(context.Context) error { return nil })(t.Context()); !ok {
		t.Fatal("NoError of a holding condition = false, want true")
	}
}
