package hostcache

import (
	"context"
	"fmt"
	"reflect"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestTrim(t *testing.T) {
	t.Parallel()
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(`{"f:data":{}}`)}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "member-1", ManagedFields: managed,
		Annotations: map[string]string{LastApplied: `{"data":{"token":"c2VjcmV0"}}`}}, Data: map[string][]byte{"token": []byte("secret")}}
	fed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "annotations": map[string]any{LastApplied: "{}", "kubefed.io/resync": "1"}},
		"spec":     map[string]any{"template": map[string]any{}},
	}}
	fed.SetManagedFields(managed)
	plain := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain", Annotations: map[string]string{"team": "pay"}}}
	tombstone := toolscache.DeletedFinalStateUnknown{Key: "ns/gone"}

	tests := []struct {
		name string
		obj  any
		want func(t *testing.T, got any)
	}{
		{name: "a Secret applied with kubectl", obj: secret, want: func(t *testing.T, got any) {
			s := got.(*corev1.Secret)
			if s.ManagedFields != nil || s.Annotations != nil || string(s.Data["token"]) != "secret" {
				t.Errorf("got managed fields %v, annotations %v, data %v; want none, none and the token", s.ManagedFields, s.Annotations, s.Data)
			}
		}},
		{name: "a federated resource keeps its other annotations", obj: fed, want: func(t *testing.T, got any) {
			u := got.(*unstructured.Unstructured)
			if u.GetManagedFields() != nil || !reflect.DeepEqual(u.GetAnnotations(), map[string]string{"kubefed.io/resync": "1"}) || u.Object["spec"] == nil {
				t.Errorf("got %v", u.Object)
			}
		}},
		{name: "an object without the annotation", obj: plain, want: func(t *testing.T, got any) {
			if a := got.(*corev1.ConfigMap).Annotations; !reflect.DeepEqual(a, map[string]string{"team": "pay"}) {
				t.Errorf("annotations %v, want them as they were", a)
			}
		}},
		{name: "a tombstone", obj: tombstone, want: func(t *testing.T, got any) {
			if got != tombstone {
				t.Errorf("got %v", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Trim(tt.obj)
			if err != nil {
				t.Fatal(err)
			}
			tt.want(t, got)
			again, err := Trim(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("a second pass gave %v, %v; want the same object", again, err)
			}
		})
	}
}

// A federated resource the cache holds decodes, on every read, to exactly
// the trimmed object, numbers as integers included; its metadata answers
// event handlers without a decode; a reader's copy is its own.
func TestHold(t *testing.T) {
	t.Parallel()
	fed := &unstructured.Unstructured{}
	if err := fed.UnmarshalJSON([]byte(`{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment",
		"metadata":{"name":"web","namespace":"shop","uid":"u-1","resourceVersion":"42","generation":3,
			"labels":{"team":"pay"},"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","kubefed.io/resync":"1"},
			"finalizers":["kubefed.io/sync-controller"],"deletionTimestamp":"2026-12-07T10:00:00Z",
			"managedFields":[{"manager":"kubectl","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
		"spec":{"template":{"spec":{"replicas":3}},"placement":{"clusters":[{"name":"member-1"}]}},
		"status":{"clusters":[{"name":"member-1","status":"OK"}]}}`)); err != nil {
		t.Fatal(err)
	}
	trimmed, err := Trim(fed.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want := trimmed.(*unstructured.Unstructured)

	got, err := Hold(fed.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	h, ok := got.(*held)
	if !ok {
		t.Fatalf("Hold made a %T; want a held object", got)
	}
	if h.GetName() != "web" || h.GetNamespace() != "shop" || h.GetGeneration() != 3 || h.GetResourceVersion() != "42" ||
		!reflect.DeepEqual(h.GetLabels(), map[string]string{"team": "pay"}) ||
		!reflect.DeepEqual(h.GetAnnotations(), map[string]string{"kubefed.io/resync": "1"}) || h.GetDeletionTimestamp().IsZero() {
		t.Errorf("the held object's metadata: %+v", h.ObjectMeta)
	}
	if key, err := toolscache.MetaNamespaceKeyFunc(h); err != nil || key != "shop/web" {
		t.Errorf("the informer's key: %q (%v)", key, err)
	}
	read, ok := h.DeepCopyObject().(*unstructured.Unstructured)
	if !ok || !reflect.DeepEqual(read.Object, want.Object) {
		t.Fatalf("a reader's copy:\n%v\nwant the trimmed object:\n%v", read, want.Object)
	}
	if r, _, _ := unstructured.NestedInt64(read.Object, "spec", "template", "spec", "replicas"); r != 3 {
		t.Errorf("replicas read as %v; want the integer 3", read.Object["spec"])
	}
	read.SetLabels(map[string]string{"changed": "by a reader"})
	unstructured.RemoveNestedField(read.Object, "spec")
	if again := h.DeepCopyObject().(*unstructured.Unstructured); !reflect.DeepEqual(again.Object, want.Object) {
		t.Errorf("a reader's change reached the cache: %v", again.Object)
	}
	if again, err := Hold(h); err != nil || again != h {
		t.Errorf("a second pass made %v (%v); want the same object", again, err)
	}

	// Typed objects and tombstones are only trimmed.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	if out, err := Hold(cm); err != nil || out != cm {
		t.Errorf("a typed object became %T (%v)", out, err)
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "shop/gone", Obj: h}
	if out, err := Hold(tomb); err != nil || out != tomb {
		t.Errorf("a tombstone became %v (%v)", out, err)
	}
}

// benchFederated is the bulk benchmark's FederatedDeployment on three
// members, with a status as the controller-manager writes it.
const benchFederated = `{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"creationTimestamp":"2026-12-07T17:50:01Z","finalizers":["kubefed.io/sync-controller"],"generation":1,"name":"bulk-1","namespace":"bench","resourceVersion":"123456","uid":"7c1e2d3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f"},` +
	`"spec":{"placement":{"clusters":[{"name":"member-1"},{"name":"member-2"},{"name":"member-3"}]},"template":{"metadata":{"labels":{"app":"bench"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"bench"}},"template":{"metadata":{"labels":{"app":"bench"}},"spec":{"containers":[{"image":"nginx:1.27","name":"app"}]}}}}},` +
	`"status":{"clusterCount":3,"clusters":[{"name":"member-1"},{"name":"member-2"},{"name":"member-3"}],` +
	`"conditions":[{"lastTransitionTime":"2026-12-07T17:50:02Z","message":"","observedGeneration":1,"reason":"Propagated","status":"True","type":"Propagation"},{"lastTransitionTime":"2026-12-07T17:50:02Z","message":"in sync in 3 of 3 clusters","observedGeneration":1,"reason":"InSync","status":"True","type":"Synced"}],"driftedClusters":0,"observedGeneration":1}}`

// BenchmarkHeldRead is what a Get from the host cache costs a sync: the
// copy controller-runtime's cache reader takes of a federated resource,
// held as JSON (now) or as unstructured maps (before).
func BenchmarkHeldRead(b *testing.B) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(benchFederated)); err != nil {
		b.Fatal(err)
	}
	h, err := Hold(u.DeepCopy())
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		obj  runtime.Object
	}{{"held", h.(runtime.Object)}, {"unstructured", u}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.obj.DeepCopyObject()
			}
		})
	}
}

// informers serves one informer, never run: Keys reads only its index.
type informers struct {
	inf toolscache.SharedIndexInformer
}

func (i informers) GetInformer(context.Context, client.Object, ...cache.InformerGetOption) (cache.Informer, error) {
	return i.inf, nil
}

// Keys names the held objects the cache holds, in every namespace or in
// one, from its index.
func TestKeys(t *testing.T) {
	t.Parallel()
	inf := toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &unstructured.Unstructured{}, 0,
		toolscache.Indexers{toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc})
	for _, key := range []types.NamespacedName{{Namespace: "shop", Name: "web"}, {Namespace: "shop", Name: "api"}, {Namespace: "blog", Name: "web"}} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("types.kubefed.io/v1beta1")
		u.SetKind("FederatedDeployment")
		u.SetNamespace(key.Namespace)
		u.SetName(key.Name)
		h, err := Hold(u)
		if err != nil {
			t.Fatal(err)
		}
		if err := inf.GetIndexer().Add(h); err != nil {
			t.Fatal(err)
		}
	}
	sorted := func(keys []types.NamespacedName) []string {
		var out []string
		for _, k := range keys {
			out = append(out, k.String())
		}
		slices.Sort(out)
		return out
	}
	for _, tt := range []struct {
		namespace string
		want      []string
	}{{"", []string{"blog/web", "shop/api", "shop/web"}}, {"shop", []string{"shop/api", "shop/web"}}, {"none", nil}} {
		keys, err := Keys(t.Context(), informers{inf}, &unstructured.Unstructured{}, tt.namespace)
		if err != nil || !slices.Equal(sorted(keys), tt.want) {
			t.Errorf("Keys in %q: %v (%v); want %v", tt.namespace, sorted(keys), err, tt.want)
		}
	}
}

// BenchmarkHeldSize reports what one federated resource held by the host
// cache costs in the heap after a garbage collection (B/object): the
// bulk's FederatedDeployment, each with a name and UID of its own.
func BenchmarkHeldSize(b *testing.B) {
	held := make([]any, b.N)
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	for i := range b.N {
		u := &unstructured.Unstructured{}
		data := strings.ReplaceAll(strings.ReplaceAll(benchFederated, "bulk-1", fmt.Sprintf("bulk-%d", i)), "0a1b2c3d4e5f", fmt.Sprintf("%012d", i))
		if err := u.UnmarshalJSON([]byte(data)); err != nil {
			b.Fatal(err)
		}
		h, err := Hold(u)
		if err != nil {
			b.Fatal(err)
		}
		held[i] = h
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N), "B/object")
	goruntime.KeepAlive(held)
}
