// Package manifest turns objects into the manifests that fedwarden's type
// commands (enable, disable, federate) print and apply: unstructured
// objects without status, printed as a YAML stream or a JSON List, applied
// server-side with a report of what the apply changed.
package manifest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Output formats of Print.
const (
	YAML = "yaml"
	JSON = "json"
)

// ValidateFormat checks an --output flag: empty, yaml or json.
func ValidateFormat(format string) error {
	switch format {
	case "", YAML, JSON:
		return nil
	default:
		return fmt.Errorf("--output %q is not supported: use yaml or json", format)
	}
}

// From returns obj as a manifest: the fields it sets, without status,
// which the server owns, nor creationTimestamp.
func From(obj client.Object) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", Describe(obj), err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", Describe(obj), err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

// Describe names an object as progress lines do: Kind namespace/name.
func Describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// Print prints manifests as a YAML stream (format yaml or empty), the
// documents separated by "---", or as a v1 List (json).
func Print(w io.Writer, format string, manifests []*unstructured.Unstructured) error {
	if format == JSON {
		items := make([]any, 0, len(manifests))
		for _, m := range manifests {
			items = append(items, m.Object)
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	for i, m := range manifests {
		data, err := yaml.Marshal(m.Object)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", Describe(m), err)
		}
		if i > 0 {
			data = append([]byte("---\n"), data...)
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
	}
	return nil
}

// Outcome says what an apply did.
type Outcome string

// Outcomes of Apply.
const (
	Created    Outcome = "created"
	Configured Outcome = "configured"
	Unchanged  Outcome = "unchanged"
)

// Apply applies u server-side as manager, taking over the fields other
// managers own, and says what it did. u holds what the server returned.
func Apply(ctx context.Context, c client.Client, u *unstructured.Unstructured, manager string) (Outcome, error) {
	before, err := ResourceVersion(ctx, c, u)
	if err != nil {
		return "", err
	}
	err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
	if err != nil {
		return "", fmt.Errorf("applying %s: %w", Describe(u), err)
	}
	switch before {
	case "":
		return Created, nil
	case u.GetResourceVersion():
		return Unchanged, nil
	default:
		return Configured, nil
	}
}

// ResourceVersion returns the resourceVersion of the object u names, or ""
// when it does not exist. It reads only the metadata.
func ResourceVersion(ctx context.Context, c client.Client, u *unstructured.Unstructured) (string, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(u.GroupVersionKind())
	err := c.Get(ctx, client.ObjectKeyFromObject(u), meta)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", Describe(u), err)
	}
	return meta.GetResourceVersion(), nil
}
