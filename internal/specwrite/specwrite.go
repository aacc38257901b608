// Package specwrite is the one rule for a command that writes a federated
// resource from a copy it read earlier (drift waive and codify, rollout
// undo): the write is refused only when the resource's spec changed since
// it was read. A change of its status or metadata alone, such as the
// controller's report meanwhile, changes nothing the command computed
// from the spec, so the write is made again on the resource as it is now.
package specwrite

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ChangedError refuses a write whose resource's spec changed (or which was
// deleted and created again) since it was read: nothing was written.
type ChangedError struct {
	// Read and Now are the resource's resourceVersion when it was read,
	// and now.
	Read, Now string
}

func (e *ChangedError) Error() string {
	return fmt.Sprintf("it changed since it was read (resourceVersion %s, now %s): nothing was written; run the command again", e.Read, e.Now)
}

// Write calls write with base, a copy of read, and, as long as write loses
// a race (a conflict, or the failed test of a JSON patch, which comes back
// as an invalid request) to a change of the resource's status or metadata
// alone, again with base the resource as it is now (the same spec, and
// current metadata). It returns a *ChangedError when the resource's
// generation or UID moved since read, and write's error otherwise. write
// must guard its write by base's resourceVersion.
func Write(ctx context.Context, c client.Client, read *unstructured.Unstructured, write func(base *unstructured.Unstructured) error) error {
	base := read.DeepCopy()
	settled := false // the last error is no race: not retried
	return retry.OnError(retry.DefaultRetry, func(err error) bool { return !settled && isRace(err) }, func() error {
		err := write(base.DeepCopy())
		if !isRace(err) {
			return err
		}
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(read.GroupVersionKind())
		if gerr := c.Get(ctx, client.ObjectKeyFromObject(read), now); gerr != nil {
			settled = true
			return fmt.Errorf("reading it again after a refused write: %w", gerr)
		}
		switch {
		case now.GetResourceVersion() == base.GetResourceVersion():
			settled = true // refused for another reason than a race
			return err
		case now.GetGeneration() != read.GetGeneration() || now.GetUID() != read.GetUID():
			settled = true
			return &ChangedError{Read: read.GetResourceVersion(), Now: now.GetResourceVersion()}
		}
		base = now // the same spec: what write computes from it holds
		return err
	})
}

func isRace(err error) bool { return apierrors.IsConflict(err) || apierrors.IsInvalid(err) }
