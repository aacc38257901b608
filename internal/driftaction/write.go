package driftaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteSpec writes value (encoded as JSON) at the field of fed's spec
// that fields name, with the caller's identity; the write fails if fed
// changed since it was read, so that nothing written meanwhile is lost.
func WriteSpec(ctx context.Context, c client.Client, fed *unstructured.Unstructured, value any, dryRun bool, fields ...string) error {
	raw, err := json.Marshal(value)
	if err != nil {
		return fmt.Errorf("encoding spec.%s: %w", strings.Join(fields, "."), err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return fmt.Errorf("encoding spec.%s: %w", strings.Join(fields, "."), err)
	}
	obj := fed.DeepCopy()
	if err := unstructured.SetNestedField(obj.Object, decoded, append([]string{"spec"}, fields...)...); err != nil {
		return fmt.Errorf("setting spec.%s: %w", strings.Join(fields, "."), err)
	}
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	err = c.Patch(ctx, obj, client.MergeFromWithOptions(fed, client.MergeFromWithOptimisticLock{}), opts...)
	if apierrors.IsConflict(err) {
		return errors.New("it changed since it was read: nothing was written; run the command again")
	}
	return err
}
