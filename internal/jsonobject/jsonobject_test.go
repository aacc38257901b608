package jsonobject

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func object(t *testing.T, data string) *Object {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(data)); err != nil {
		t.Fatal(err)
	}
	o, err := New(u)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The labels and annotations held as pairs read as the maps they were,
// each read a map of the reader's own, and decode back into the object.
func TestLabelsAndAnnotationsReadAsMaps(t *testing.T) {
	t.Parallel()
	const data = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web","namespace":"shop",` +
		`"labels":{"team":"pay","app":"web"},"annotations":{"fedwarden.io/desired-hash":"9f2c4e1d7a8b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d","z":""}},"data":{"k":"v"}}`
	o := object(t, data)
	wantLabels := map[string]string{"team": "pay", "app": "web"}
	wantAnnotations := map[string]string{"fedwarden.io/desired-hash": "9f2c4e1d7a8b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d", "z": ""}
	if !reflect.DeepEqual(o.GetLabels(), wantLabels) || !reflect.DeepEqual(o.GetAnnotations(), wantAnnotations) {
		t.Fatalf("labels %v, annotations %v; want %v and %v", o.GetLabels(), o.GetAnnotations(), wantLabels, wantAnnotations)
	}
	if m := o.GetObjectMeta(); !reflect.DeepEqual(m.GetLabels(), wantLabels) || !reflect.DeepEqual(m.GetAnnotations(), wantAnnotations) {
		t.Errorf("GetObjectMeta reads labels %v and annotations %v", m.GetLabels(), m.GetAnnotations())
	}
	o.GetLabels()["team"] = "changed by a reader"
	if o.GetLabels()["team"] != "pay" {
		t.Error("a reader's change of the labels it read reached the object")
	}

	u, err := o.Decode()
	if err != nil {
		t.Fatal(err)
	}
	want := &unstructured.Unstructured{}
	if err := want.UnmarshalJSON([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(u.Object, want.Object) {
		t.Errorf("decoded:\n%v\nwant:\n%v", u.Object, want.Object)
	}

	cp := o.DeepCopyObject().(*Object)
	cp.SetLabels(map[string]string{"x": "y"})
	cp.SetAnnotations(nil)
	if !reflect.DeepEqual(o.GetLabels(), wantLabels) || !reflect.DeepEqual(o.GetAnnotations(), wantAnnotations) {
		t.Error("setting a deep copy's labels or annotations changed the original's")
	}
	if !reflect.DeepEqual(cp.GetLabels(), map[string]string{"x": "y"}) || cp.GetAnnotations() != nil {
		t.Errorf("the copy's labels %v and annotations %v after setting them", cp.GetLabels(), cp.GetAnnotations())
	}
}

// An object without labels or annotations reads nil for them, as an
// unstructured object does, and decodes without them.
func TestNoLabelsReadNil(t *testing.T) {
	t.Parallel()
	o := object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web"}}`)
	if o.GetLabels() != nil || o.GetAnnotations() != nil {
		t.Errorf("labels %v, annotations %v; want nil", o.GetLabels(), o.GetAnnotations())
	}
	u, err := o.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "labels"); found {
		t.Errorf("decoded with labels: %v", u.Object)
	}
}

// Objects of a kind repeat their label and annotation keys and their short
// values: each is held once, whatever the number of objects.
func TestKeysAndShortValuesAreShared(t *testing.T) {
	t.Parallel()
	a := object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"kubefed.io/managed":"true"}}}`)
	runtime.GC() // what is interned outlives a collection
	runtime.GC()
	b := object(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b","labels":{"kubefed.io/managed":"true"}}}`)
	for i := range a.meta {
		if unsafe.StringData(a.meta[i]) != unsafe.StringData(b.meta[i]) {
			t.Errorf("%q is held twice", a.meta[i])
		}
	}
}

// Objects held compressed decode to what they were, each with its kind's
// dictionary, when several kinds are held at once; an object of a kind
// seen before is held in a fraction of its JSON.
func TestCompressedObjectsDecodeToWhatTheyWere(t *testing.T) {
	t.Parallel()
	docs := func(kind string, i int) string {
		return fmt.Sprintf(`{"apiVersion":"test.fedwarden.io/v1","kind":%q,"metadata":{"name":"web-%d","namespace":"shop","uid":"7c1e2d3f-4a5b-6c7d-8e9f-%012d","labels":{"app":"web"}},`+
			`"spec":{"replicas":%d,"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.27","imagePullPolicy":"IfNotPresent","terminationMessagePath":"/dev/termination-log"}]}}}}`, kind, i, i, i)
	}
	var wg sync.WaitGroup
	for _, kind := range []string{"CompressedA", "CompressedB"} {
		for i := range 20 {
			wg.Go(func() {
				data := docs(kind, i)
				o := object(t, data)
				for range 2 { // a decompressor is reused
					u, err := o.Decode()
					if err != nil {
						t.Error(err)
						return
					}
					want := &unstructured.Unstructured{}
					if err := want.UnmarshalJSON([]byte(data)); err != nil {
						t.Error(err)
						return
					}
					if !reflect.DeepEqual(u.Object, want.Object) {
						t.Errorf("decoded:\n%v\nwant:\n%v", u.Object, want.Object)
					}
				}
			})
		}
	}
	wg.Wait()
	data := docs("CompressedA", 1000)
	if o := object(t, data); o.dict == nil || len(o.rest) > len(data)/4 {
		t.Errorf("an object of a kind seen before is held in %d bytes of its JSON's %d (compressed: %t)", len(o.rest), len(data), o.dict != nil)
	}
}

// Secrets, and the federated kinds that hold them, are not compressed: a
// dictionary, kept for good, would keep the first one's data after it is
// gone.
func TestSecretsAreNotCompressed(t *testing.T) {
	t.Parallel()
	for _, apiVersion := range []string{"v1/Secret", "types.kubefed.io/v1beta1/FederatedSecret"} {
		i := strings.LastIndexByte(apiVersion, '/')
		for n := range 2 {
			o := object(t, fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":"s-%d"},"data":{"token":"c2VjcmV0"}}`, apiVersion[:i], apiVersion[i+1:], n))
			if o.dict != nil {
				t.Errorf("%s %d is held compressed", apiVersion, n)
			}
			if _, ok := dictionaries.Load(apiVersion); ok {
				t.Errorf("a dictionary was made of a %s", apiVersion)
			}
		}
	}
}
