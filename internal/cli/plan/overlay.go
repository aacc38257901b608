package plan

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// overlay is the host as it will be once the manifests of -f are applied:
// a Get of an object a manifest holds returns the manifest's, any other
// read goes to the host. The place stage reads through it, so that a
// FederatedDeployment is planned in the namespace the FederatedNamespace
// of the same files federates, as the controller will place it once both
// are applied.
type overlay struct {
	client.Reader
	scheme  *runtime.Scheme
	planned []*unstructured.Unstructured
}

// Get returns the planned object of key's kind and name, else the host's.
func (o overlay) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := apiutil.GVKForObject(obj, o.scheme)
	if err != nil {
		return o.Reader.Get(ctx, key, obj, opts...)
	}
	for _, u := range o.planned {
		if u.GroupVersionKind() != gvk || u.GetNamespace() != key.Namespace || u.GetName() != key.Name {
			continue
		}
		if out, ok := obj.(*unstructured.Unstructured); ok {
			u.DeepCopyInto(out)
			return nil
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return fmt.Errorf("reading the planned %s %s: %w", gvk.Kind, key, err)
		}
		return nil
	}
	return o.Reader.Get(ctx, key, obj, opts...)
}
