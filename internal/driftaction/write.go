package driftaction

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/specwrite"
)

// WriteSpec writes value (encoded as JSON) at the field of fed's spec
// that fields name, with the caller's identity, as a merge patch guarded
// by fed's resourceVersion. It is refused when fed's spec changed since it
// was read (specwrite.Write), so that nothing written meanwhile is lost
// and value, computed from that spec, still holds.
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
	return specwrite.Write(ctx, c, fed, func(base *unstructured.Unstructured) error {
		obj := base.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, decoded, append([]string{"spec"}, fields...)...); err != nil {
			return fmt.Errorf("setting %s: %w", field, err)
		}
		return c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), opts...)
	})
}
