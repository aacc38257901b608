package driftaction

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TakenUp waits, up to within, until the controller-manager has observed
// the spec of fed as it is now, reading fed again from c: its
// status.observedGeneration reaches its generation. A waiver holds only
// from then on: before, an edit of a waived path may still be healed. It
// returns the last of both it read, and an error when it could not read
// fed or the wait ended first.
func TakenUp(ctx context.Context, c client.Reader, fed *unstructured.Unstructured, within time.Duration) (observed, generation int64, err error) {
	key := client.ObjectKeyFromObject(fed)
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(fed.GroupVersionKind())
		if err := c.Get(ctx, key, now); err != nil {
			return false, err
		}
		generation = now.GetGeneration()
		observed, _, _ = unstructured.NestedInt64(now.Object, "status", "observedGeneration")
		return observed >= generation, nil
	})
	return observed, generation, err
}

// NotTakenUp says why TakenUp did not see the spec taken up within: what
// it read last, or, when it could read nothing, the error.
func NotTakenUp(within time.Duration, observed, generation int64, err error) string {
	if generation == 0 && err != nil {
		return fmt.Sprintf("the controller-manager has not taken the waiver up within %s (%v): until it does, an edit of the waived paths may still be healed", within, err)
	}
	return fmt.Sprintf("the controller-manager has not taken the waiver up within %s (its status.observedGeneration is %d, its generation %d): "+
		"until it does, an edit of the waived paths may still be healed", within, observed, generation)
}
