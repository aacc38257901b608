package jsonobject

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// Object is an object held as JSON, and beside it the metadata an
// informer's event handlers read at every event (name, namespace, UID,
// resourceVersion, generation, labels, annotations, deletion), which the
// JSON leaves out where it would repeat it. Decode gives the whole object.
//
// The labels and annotations are not in ObjectMeta, whose Labels and
// Annotations stay nil, but in meta: read them with GetLabels and
// GetAnnotations, which return maps of the caller's own.
//
// The JSON is held compressed with a dictionary of its kind when that
// makes it smaller. rest and meta are never changed in place once set:
// copies of an Object share them.
type Object struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	// meta holds the labels, then the annotations, as key, value, key,
	// value…, each sorted by key; labels is how many strings are the
	// labels'. Two Go maps took about 300 bytes each however few entries
	// they held, most of what a cached copy cost beside its JSON
	// (bench/RESULTS.md, "Held objects compressed, labels as pairs"). Keys
	// and short values are interned: the objects of a kind repeat them.
	meta   []string
	labels int
	// rest is the JSON, compressed with dict unless dict is nil.
	rest []byte
	dict *dictionary
}

var (
	_ runtime.Object = (*Object)(nil)
	_ metav1.Object  = (*Object)(nil)
)

// internedValue is the length up to which a value is interned: longer
// ones (UIDs, hashes) are most often one object's own.
const internedValue = 24

// maxInterned bounds the strings intern keeps, for good: about 0.5 MiB
// at most, should short values be each object's own (names in labels).
const maxInterned = 8192

// interned is the table of intern. Package unique would not do: a
// string its handle's Value returns does not keep the handle's entry,
// so that once the handles are collected the next object gets a new
// string again.
var interned struct {
	sync.RWMutex
	m map[string]string
}

// intern returns the string equal to s that the table holds, adding s
// while the table has room; s itself once it is full.
func intern(s string) string {
	interned.RLock()
	v, ok := interned.m[s]
	interned.RUnlock()
	if ok {
		return v
	}
	interned.Lock()
	defer interned.Unlock()
	if v, ok := interned.m[s]; ok {
		return v
	}
	if len(interned.m) >= maxInterned {
		return s
	}
	if interned.m == nil {
		interned.m = map[string]string{}
	}
	s = strings.Clone(s)
	interned.m[s] = s
	return s
}

// pairs appends m's entries to meta, sorted by key.
func pairs(meta []string, m map[string]string) []string {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if len(v) <= internedValue {
			v = intern(v)
		}
		meta = append(meta, intern(k), v)
	}
	return meta
}

// asMap returns the pairs kv as a map of the caller's own; nil when there
// are none, as an object without them decodes.
func asMap(kv []string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// setMeta holds labels and annotations, in a slice of its own.
func (o *Object) setMeta(labels, annotations map[string]string) {
	meta := make([]string, 0, 2*(len(labels)+len(annotations)))
	meta = pairs(meta, labels)
	o.labels = len(meta)
	o.meta = pairs(meta, annotations)
}

// GetLabels returns the labels, a map of the caller's own.
func (o *Object) GetLabels() map[string]string { return asMap(o.meta[:o.labels]) }

// SetLabels replaces the labels.
func (o *Object) SetLabels(labels map[string]string) { o.setMeta(labels, o.GetAnnotations()) }

// GetAnnotations returns the annotations, a map of the caller's own.
func (o *Object) GetAnnotations() map[string]string { return asMap(o.meta[o.labels:]) }

// SetAnnotations replaces the annotations.
func (o *Object) SetAnnotations(annotations map[string]string) {
	o.setMeta(o.GetLabels(), annotations)
}

// GetObjectMeta returns the object itself: ObjectMeta alone does not hold
// the labels and annotations.
func (o *Object) GetObjectMeta() metav1.Object { return o }

// New returns u, which it takes over, as an Object.
func New(u *unstructured.Unstructured) (*Object, error) {
	o := &Object{
		TypeMeta: metav1.TypeMeta{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()},
		ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), DeletionTimestamp: u.GetDeletionTimestamp(),
		},
	}
	o.setMeta(u.GetLabels(), u.GetAnnotations())
	if meta, ok := u.Object["metadata"].(map[string]any); ok {
		delete(meta, "labels")
		delete(meta, "annotations")
	}
	rest, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s for the cache: %w", o.Kind, o.Namespace, o.Name, err)
	}
	o.rest = rest
	if scrub.HoldsSecretValues(o.GroupVersionKind()) {
		// A dictionary would keep the first Secret's data for as long as
		// the process runs, after the Secret is gone.
		return o, nil
	}
	dict := dictionaryFor(o.APIVersion+"/"+o.Kind, rest)
	compressed, err := dict.compress(rest)
	if err != nil {
		return nil, fmt.Errorf("compressing %s %s/%s for the cache: %w", o.Kind, o.Namespace, o.Name, err)
	}
	if len(compressed) < len(rest) {
		o.rest, o.dict = compressed, dict
	}
	return o, nil
}

// Decode returns the whole object: a new one each time, the caller's own.
// Numbers that are integers decode as int64, as from the API server.
func (o *Object) Decode() (*unstructured.Unstructured, error) {
	data := o.rest
	if o.dict != nil {
		var err error
		if data, err = o.dict.decompress(o.rest); err != nil {
			return nil, fmt.Errorf("decoding the cached %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("decoding the cached %s %s/%s: %w", o.Kind, o.Namespace, o.Name, err)
	}
	if labels := o.GetLabels(); len(labels) > 0 {
		u.SetLabels(labels)
	}
	if annotations := o.GetAnnotations(); len(annotations) > 0 {
		u.SetAnnotations(annotations)
	}
	return u, nil
}

// DeepCopyObject copies the metadata; the labels, annotations and JSON,
// never changed in place, are shared.
func (o *Object) DeepCopyObject() runtime.Object {
	out := &Object{TypeMeta: o.TypeMeta, meta: o.meta, labels: o.labels, rest: o.rest, dict: o.dict}
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}
