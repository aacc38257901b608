package jsonobject

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Object is an object held as JSON, and beside it the metadata an
// informer's event handlers read at every event (name, namespace, UID,
// resourceVersion, generation, labels, annotations, deletion), which the
// JSON leaves out where it would repeat it. Decode gives the whole object.
//
// rest is never changed once set: copies of an Object share it.
type Object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	rest []byte
}

var (
	_ runtime.Object = (*Object)(nil)
	_ metav1.Object  = (*Object)(nil)
)

// New returns u, which it takes over, as an Object.
func New(u *unstructured.Unstructured) (*Object, error) {
	o := &Object{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), Labels: u.GetLabels(), Annotations: u.GetAnnotations(),
			DeletionTimestamp: u.GetDeletionTimestamp(),
		},
	}
	if meta, ok := u.Object["metadata"].(map[string]any); ok {
		delete(meta, "labels")
		delete(meta, "annotations")
	}
	rest, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s for the cache: %w", o.Kind, o.Namespace, o.Name, err)
	}
	o.rest = rest
	return o, nil
}

// Decode returns the whole object: a new one each time, the caller's own.
// Numbers that are integers decode as int64, as from the API server.
func (o *Object) Decode() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(o.rest); err != nil {
		return nil, fmt.Errorf("decoding the cached %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
	}
	if len(o.Labels) > 0 {
		u.SetLabels(o.Labels)
	}
	if len(o.Annotations) > 0 {
		u.SetAnnotations(o.Annotations)
	}
	return u, nil
}

// DeepCopyObject copies the metadata; the JSON, never changed, is shared.
func (o *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: o.TypeMeta, rest: o.rest}
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}
