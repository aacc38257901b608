// Package manifest turns objects into the manifests that fedwarden's
// commands (join, enable, disable, federate) print and apply: unstructured
// objects without status, printed as a YAML stream or a JSON List, applied
// server-side with a report of what the apply changed.
//
// It also reads manifests, the one rule for what -f names: a file, a
// directory's .yaml, .yml and .json files in name order (Files, which
// enable uses too), or standard input, each a YAML stream or JSON of
// objects with an apiVersion, a kind and a name (Read for plan, Decode for
// up's embedded samples).
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
// which the server owns, nor creationTimestamp, nor an empty spec.
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
	if spec, ok := u.Object["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u.Object, "spec")
	}
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

// PrintObjects prints objs as manifests (From), as Print does.
func PrintObjects(w io.Writer, format string, objs []client.Object) error {
	manifests := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		m, err := From(obj)
		if err != nil {
			return err
		}
		manifests = append(manifests, m)
	}
	return Print(w, format, manifests)
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

// Applier applies manifests server-side to one cluster.
type Applier struct {
	Client client.Client
	// Side names the cluster in errors, as "member" does in "applying
	// Secret a/b on the member", for a command that writes to more than
	// one cluster; empty for one that writes to one only.
	Side string
}

// Apply applies u server-side as manager, taking over the fields other
// managers own, and says what it did. u holds what the server returned.
func (a Applier) Apply(ctx context.Context, u *unstructured.Unstructured, manager string) (Outcome, error) {
	before, err := a.ResourceVersion(ctx, u)
	if err != nil {
		return "", err
	}
	err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
	if err != nil {
		return "", fmt.Errorf("applying %s: %w", a.describe(u), err)
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
// when it does not exist. It reads only the metadata: never a Secret's
// data.
func (a Applier) ResourceVersion(ctx context.Context, u *unstructured.Unstructured) (string, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(u.GroupVersionKind())
	err := a.Client.Get(ctx, client.ObjectKeyFromObject(u), meta)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", a.describe(u), err)
	}
	return meta.GetResourceVersion(), nil
}

// describe names u, and the cluster when a.Side does.
func (a Applier) describe(u *unstructured.Unstructured) string {
	if a.Side == "" {
		return Describe(u)
	}
	return Describe(u) + " on the " + a.Side
}
