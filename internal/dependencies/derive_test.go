package dependencies

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var federatedConfigMap = schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedConfigMap"}

func hostObject(kind string, fields map[string]any) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind}}
	for k, v := range fields {
		obj.Object[k] = v
	}
	return obj
}

func TestTemplate(t *testing.T) {
	cases := []struct {
		name string
		host *unstructured.Unstructured
		want map[string]any
	}{{
		name: "a ConfigMap keeps its data, labels and own annotations, not what servers and kubectl set",
		host: hostObject(ConfigMap, map[string]any{
			"metadata": map[string]any{"name": "c", "namespace": "n", "uid": "u", "resourceVersion": "7",
				"labels":      map[string]any{"app": "web"},
				"annotations": map[string]any{"team": "a", "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
			"data": map[string]any{"k": "v"},
		}),
		want: map[string]any{"data": map[string]any{"k": "v"},
			"metadata": map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"team": "a"}}},
	}, {
		name: "a claim loses the volume its host bound it to, and the binder's annotations",
		host: hostObject(PersistentVolumeClaim, map[string]any{
			"metadata": map[string]any{"name": "c", "annotations": map[string]any{"pv.kubernetes.io/bind-completed": "yes"}},
			"spec":     map[string]any{"accessModes": []any{"ReadWriteOnce"}, "volumeName": "pv-host-1"},
			"status":   map[string]any{"phase": "Bound"},
		}),
		want: map[string]any{"spec": map[string]any{"accessModes": []any{"ReadWriteOnce"}}},
	}, {
		name: "a ServiceAccount loses its legacy token Secrets",
		host: hostObject(ServiceAccount, map[string]any{
			"metadata":         map[string]any{"name": "sa"},
			"secrets":          []any{map[string]any{"name": "sa-token-x"}},
			"imagePullSecrets": []any{map[string]any{"name": "pull"}},
		}),
		want: map[string]any{"imagePullSecrets": []any{map[string]any{"name": "pull"}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Template(tc.host); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Template:\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func TestDerive(t *testing.T) {
	host := hostObject(ConfigMap, map[string]any{"metadata": map[string]any{"name": "c", "resourceVersion": "42"}, "data": map[string]any{"k": "v"}})
	owners := Owners{
		"FederatedDeployment.types.kubefed.io/web":    {Clusters: []string{"b", "a"}, Remediation: typesv1beta1.RemediationAlert},
		"FederatedDeployment.types.kubefed.io/worker": {Clusters: []string{"c", "b"}, Remediation: typesv1beta1.RemediationEnforce, Adopt: true},
	}
	existing := &unstructured.Unstructured{}
	existing.SetLabels(map[string]string{"keep": "me"})
	existing.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	got, err := Derive(federatedConfigMap, "n", "c", host, existing, owners)
	if err != nil {
		t.Fatal(err)
	}
	if !IsDerived(got) || got.GetLabels()["keep"] != "me" {
		t.Errorf("labels %v: want the dependency label beside those kept", got.GetLabels())
	}
	a := got.GetAnnotations()
	if a[typesv1beta1.AnnotationConflictResolution] != "adopt" || a[typesv1beta1.AnnotationOrphan] != "" || a[typesv1beta1.AnnotationDependencySource] != "42" {
		t.Errorf("annotations %v: want adopt (an owner adopts), no orphan (none orphans), the source version 42", a)
	}
	placed, _, _ := unstructured.NestedSlice(got.Object, "spec", "placement", "clusters")
	if want := []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}, map[string]any{"name": "c"}}; !reflect.DeepEqual(placed, want) {
		t.Errorf("placement %v: want the owners' union, sorted, each once: %v", placed, want)
	}
	if r, _, _ := unstructured.NestedString(got.Object, "spec", "driftPolicy", "remediation"); r != "Enforce" {
		t.Errorf("remediation %q: want the strictest an owner asks, Enforce", r)
	}
	back, err := OwnersOf(got)
	if err != nil || !reflect.DeepEqual(back, owners) {
		t.Errorf("OwnersOf: %v, %v; want %v", back, err, owners)
	}

	// The last owner gone: an empty placement, the template kept when
	// the host object is not read again.
	gone, err := Derive(federatedConfigMap, "n", "c", nil, got, Owners{})
	if err != nil {
		t.Fatal(err)
	}
	if placed, found, _ := unstructured.NestedSlice(gone.Object, "spec", "placement", "clusters"); !found || len(placed) != 0 {
		t.Errorf("placement %v (found %t): want an empty list", placed, found)
	}
	if data, _, _ := unstructured.NestedStringMap(gone.Object, "spec", "template", "data"); data["k"] != "v" {
		t.Errorf("template data %v: want the last copied", data)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(gone.Object, "spec", "driftPolicy"); found {
		t.Error("a drift policy with no owner asking for one")
	}
}

func TestOwnersOfAnUnreadableAnnotation(t *testing.T) {
	obj := &unstructured.Unstructured{}
	obj.SetKind("FederatedConfigMap")
	obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationDependencyOf: "{not json"})
	if _, err := OwnersOf(obj); err == nil {
		t.Error("OwnersOf read a malformed annotation without an error")
	}
}
