package propagation

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// cachedCopy is how the member informers hold a copy: the copy as
// copyProjection leaves it, encoded as JSON, and beside it the metadata
// the informers' event handlers read at every event (name, namespace,
// resourceVersion, generation, labels, annotations, deletion), which the
// JSON leaves out where it would repeat it. A copy decoded into
// unstructured maps takes several times its JSON (BenchmarkCachedCopySize:
// a Go map of up to eight entries takes about 300 bytes, whatever it
// holds), and the member copies are most of the controller's memory
// (bench/RESULTS.md, the memory model). A sync decodes the copy it reads
// (Object), which is then its own to change.
//
// rest is never changed once set: copies of a cachedCopy share it.
type cachedCopy struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	rest []byte
}

var _ runtime.Object = (*cachedCopy)(nil)

// compact returns u, which it takes over, as a cachedCopy.
func compact(u *unstructured.Unstructured) (*cachedCopy, error) {
	c := &cachedCopy{
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
		return nil, fmt.Errorf("encoding the cached copy %s/%s: %w", c.Namespace, c.Name, err)
	}
	c.rest = rest
	return c, nil
}

// Object decodes the copy: a new object each time.
func (c *cachedCopy) Object() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(c.rest); err != nil {
		return nil, fmt.Errorf("decoding the cached copy %s/%s: %w", c.Namespace, c.Name, err)
	}
	if len(c.Labels) > 0 {
		u.SetLabels(c.Labels)
	}
	if len(c.Annotations) > 0 {
		u.SetAnnotations(c.Annotations)
	}
	return u, nil
}

// DeepCopyObject copies the metadata; the JSON, never changed, is shared.
func (c *cachedCopy) DeepCopyObject() runtime.Object {
	out := &cachedCopy{TypeMeta: c.TypeMeta, rest: c.rest}
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// copyOf is the copy obj, an object of a member informer, holds, decoded:
// false when obj is no copy (a tombstone), or cannot be decoded.
func copyOf(obj any) (*unstructured.Unstructured, bool) {
	switch o := obj.(type) {
	case *cachedCopy:
		u, err := o.Object()
		return u, err == nil
	case *unstructured.Unstructured:
		return o, true
	}
	return nil, false
}
