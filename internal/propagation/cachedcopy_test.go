package propagation

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
)

// A copy the informers cache decodes to exactly what the projection made,
// numbers as integers included, and its metadata answers the event
// handlers without a decode.
func TestACachedCopyDecodesToItsProjection(t *testing.T) {
	t.Parallel()
	live := asDecoded(t, web(t, webEntries()))
	live.SetDeletionTimestamp(&metav1.Time{Time: metav1.Now().Rfc3339Copy().Time})
	want := asDecoded(t, transformed(t, copyProjection{}, live.DeepCopy()))

	out, err := copyProjection{}.cache(live.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := out.(*cachedCopy)
	if !ok {
		t.Fatalf("the informers' transform made a %T; want a *cachedCopy", out)
	}
	got, ok := copyOf(c)
	if !ok || !reflect.DeepEqual(got.Object, want.Object) {
		t.Fatalf("decoded copy:\n%v\nwant the projection:\n%v", got, want.Object)
	}
	if g, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas"); g != 1 {
		t.Errorf("spec.replicas decodes as %d (%T); want the integer 1", g, got.Object["spec"].(map[string]any)["replicas"])
	}
	if c.GetName() != want.GetName() || c.GetNamespace() != want.GetNamespace() || c.GetResourceVersion() != want.GetResourceVersion() ||
		c.GetGeneration() != want.GetGeneration() || c.GetUID() != want.GetUID() ||
		!reflect.DeepEqual(c.GetLabels(), want.GetLabels()) || !reflect.DeepEqual(c.GetAnnotations(), want.GetAnnotations()) ||
		!c.GetDeletionTimestamp().Equal(want.GetDeletionTimestamp()) {
		t.Errorf("the cached copy's metadata %+v differs from the projection's %v", c.ObjectMeta, want.Object["metadata"])
	}
	if key, err := cache.MetaNamespaceKeyFunc(c); err != nil || key != want.GetNamespace()+"/"+want.GetName() {
		t.Errorf("the informer's key of the cached copy: %q (%v)", key, err)
	}

	// A second pass leaves it; a decoded copy is the reader's own.
	if again, err := (copyProjection{}).cache(c); err != nil || again != c {
		t.Errorf("a second pass of the transform made %v (%v); want the same object", again, err)
	}
	got.SetLabels(map[string]string{"changed": "by a reader"})
	unstructured.RemoveNestedField(got.Object, "spec")
	if fresh, _ := copyOf(c); !reflect.DeepEqual(fresh.Object, want.Object) {
		t.Errorf("a reader's change of its decoded copy reached the cache: %v", fresh.Object)
	}
	cp := c.DeepCopyObject().(*cachedCopy)
	cp.SetLabels(map[string]string{"x": "y"})
	cp.GetAnnotations()["x"] = "y"
	if !reflect.DeepEqual(c.GetLabels(), want.GetLabels()) || !reflect.DeepEqual(c.GetAnnotations(), want.GetAnnotations()) {
		t.Error("a change of a deep copy's labels or annotations reached the original")
	}
	if m := c.GetObjectMeta(); !reflect.DeepEqual(m.GetLabels(), want.GetLabels()) || !reflect.DeepEqual(m.GetAnnotations(), want.GetAnnotations()) {
		t.Errorf("the cached copy's GetObjectMeta has the labels %v and annotations %v; want %v and %v", m.GetLabels(), m.GetAnnotations(), want.GetLabels(), want.GetAnnotations())
	}

	// Tombstones pass as they are, and are no copy.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: c}
	if out, err := (copyProjection{}).cache(tomb); err != nil || out != tomb {
		t.Errorf("a tombstone became %v (%v)", out, err)
	}
	if _, ok := copyOf(tomb); ok {
		t.Error("copyOf decoded a tombstone")
	}
}

// asDecoded is u as an informer decodes it from the wire: numbers that
// are integers as int64 (a YAML fixture has float64).
func asDecoded(t *testing.T, u *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	data, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return out
}

// BenchmarkCachedCopyDecode is what a sync pays to read a copy from the
// informer: the bulk's Deployment, held as a cachedCopy, decoded.
func BenchmarkCachedCopyDecode(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(bulkCopy)); err != nil {
		b.Fatal(err)
	}
	out, err := copyProjection{}.cache(u)
	if err != nil {
		b.Fatal(err)
	}
	c := out.(*cachedCopy)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}
