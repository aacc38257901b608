package driftaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errSpecChanged is the refusal of a write whose resource's spec changed
// since it was read.
var errSpecChanged = errors.New("it changed since it was read: nothing was written; run the command again")

// WriteSpec writes value (encoded as JSON) at the field of fed's spec
// that fields name, with the caller's identity. The write fails if fed's
// spec changed since it was read (its generation moved), so that nothing
// written meanwhile is lost and value, computed from that spec, still
// holds. A change of its status or metadata alone, such as the
// controller's report, is no reason to refuse: the write is made again on
// the resource as it is now.
func WriteSpec(ctx context.Context, c client.Client, fed *unstructured.Unstructured, value any, dryRun bool, fields ...string) error {
	field := "spec." + strings.Join(fields, ".")
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", field, err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return fmt.Errorf("encoding %s: %w", field, err)
	}
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	base := fed.DeepCopy()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := base.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, decoded, append([]string{"spec"}, fields...)...); err != nil {
			return fmt.Errorf("setting %s: %w", field, err)
		}
		err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), opts...)
		if !apierrors.IsConflict(err) {
			return err
		}
		now := &unstructured.Unstructured{}
		now.SetGroupVersionKind(fed.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKeyFromObject(fed), now); err != nil {
			return fmt.Errorf("reading it again after a conflict: %w", err)
		}
		if now.GetGeneration() != fed.GetGeneration() || now.GetUID() != fed.GetUID() {
			return errSpecChanged
		}
		base.SetResourceVersion(now.GetResourceVersion())
		return err // the conflict: written again on now's resourceVersion
	})
	if apierrors.IsConflict(err) {
		return errSpecChanged // still racing the controller after every retry
	}
	return err
}
