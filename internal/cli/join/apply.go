package join

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applier applies objects to one side of a join, server-side, and reports
// what each apply did.
type applier struct {
	client  client.Client
	cluster string    // the cluster being joined, prefixing every line
	side    string    // "member" or "host"
	out     io.Writer // progress
}

// apply applies obj as manager, taking over fields other managers own, and
// returns the object the server holds afterwards.
func (a *applier) apply(ctx context.Context, obj client.Object, manager string) (*unstructured.Unstructured, error) {
	u, err := manifest(obj)
	if err != nil {
		return nil, err
	}
	before, err := a.resourceVersion(ctx, u)
	if err != nil {
		return nil, err
	}
	err = a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
	if err != nil {
		return nil, fmt.Errorf("applying %s on the %s: %w", describe(u), a.side, err)
	}
	fmt.Fprintf(a.out, "%s: %s %s on the %s\n", a.cluster, verb(before, u.GetResourceVersion()), describe(u), a.side)
	return u, nil
}

// resourceVersion returns the resourceVersion of the object u names, or ""
// when it does not exist. It reads only the metadata: never a Secret's data.
func (a *applier) resourceVersion(ctx context.Context, u *unstructured.Unstructured) (string, error) {
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(u.GroupVersionKind())
	err := a.client.Get(ctx, client.ObjectKeyFromObject(u), meta)
	switch {
	case apierrors.IsNotFound(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading %s on the %s: %w", describe(u), a.side, err)
	}
	return meta.GetResourceVersion(), nil
}

// verb says what an apply did, from the resourceVersions before and after.
func verb(before, after string) string {
	switch before {
	case "":
		return "created"
	case after:
		return "unchanged"
	default:
		return "configured"
	}
}

// describe names an object as progress lines do: Kind namespace/name.
func describe(obj client.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if obj.GetNamespace() == "" {
		return kind + " " + obj.GetName()
	}
	return kind + " " + obj.GetNamespace() + "/" + obj.GetName()
}

// manifest returns obj as the apply configuration or manifest join writes:
// the fields obj sets, without status, which the server owns, nor an empty
// spec.
func manifest(obj client.Object) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", describe(obj), err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", describe(obj), err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if spec, ok := u.Object["spec"].(map[string]any); ok && len(spec) == 0 {
		delete(u.Object, "spec")
	}
	return u, nil
}
