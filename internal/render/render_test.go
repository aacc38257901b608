package render

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var deployments = Target{Kind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, Namespaced: true}

func mustDecode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}

// KubeFed's sample1 FederatedDeployment, with its overrides for cluster2.
const sample = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: test-deployment, namespace: test-namespace, uid: abc, resourceVersion: "7"}
spec:
  template:
    metadata: {labels: {app: nginx}, annotations: {a: b}, uid: "ignored"}
    spec:
      replicas: 3
      selector: {matchLabels: {app: nginx}}
      template:
        metadata: {labels: {app: nginx}}
        spec: {containers: [{image: nginx, name: nginx}]}
    status: {replicas: 9}
  placement: {clusters: [{name: cluster2}, {name: cluster1}]}
  overrides:
  - clusterName: cluster2
    clusterOverrides:
    - {path: /spec/replicas, value: 5}
    - {path: /spec/template/spec/containers/0/image, value: "nginx:1.17.0-alpine"}
    - {path: /metadata/annotations, op: add, value: {foo: bar}}
    - {path: /metadata/annotations/foo, op: remove}
`

func TestRenderKubeFedSample(t *testing.T) {
	fed := mustDecode(t, sample)
	spec, err := ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := WithOverrides(deployments, fed, spec.OverridesFor("cluster1"))
	if err != nil {
		t.Fatal(err)
	}
	overridden, err := WithOverrides(deployments, fed, spec.OverridesFor("cluster2"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		obj      *unstructured.Unstructured
		replicas int64
		image    string
		annots   map[string]string
	}{
		{plain, 3, "nginx", map[string]string{"a": "b"}},
		// "add /metadata/annotations" replaces the map, then foo is removed.
		{overridden, 5, "nginx:1.17.0-alpine", map[string]string{}},
	} {
		if tc.obj.GetAPIVersion() != "apps/v1" || tc.obj.GetKind() != "Deployment" || tc.obj.GetName() != "test-deployment" || tc.obj.GetNamespace() != "test-namespace" {
			t.Errorf("identity = %s %s %s/%s", tc.obj.GetAPIVersion(), tc.obj.GetKind(), tc.obj.GetNamespace(), tc.obj.GetName())
		}
		if r, _, _ := unstructured.NestedInt64(tc.obj.Object, "spec", "replicas"); r != tc.replicas {
			t.Errorf("replicas = %d, want %d", r, tc.replicas)
		}
		containers, _, _ := unstructured.NestedSlice(tc.obj.Object, "spec", "template", "spec", "containers")
		if img := containers[0].(map[string]any)["image"]; img != tc.image {
			t.Errorf("image = %v, want %s", img, tc.image)
		}
		if got := tc.obj.GetAnnotations(); len(got) != len(tc.annots) || got["a"] != tc.annots["a"] {
			t.Errorf("annotations = %v, want %v", got, tc.annots)
		}
		if tc.obj.GetLabels()[typesv1beta1.LabelManaged] != "true" || tc.obj.GetLabels()["app"] != "nginx" {
			t.Errorf("labels = %v", tc.obj.GetLabels())
		}
		if tc.obj.GetUID() != "" || tc.obj.GetResourceVersion() != "" {
			t.Error("server-set metadata leaked from the template or the federated object")
		}
		if _, found := tc.obj.Object["status"]; found {
			t.Error("the template's status was kept")
		}
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(fed.Object, "spec", "template", "spec", "replicas"); !found {
		t.Error("render changed the federated object")
	}
}

func TestRenderOverrideErrorsNameTheOverride(t *testing.T) {
	fed := mustDecode(t, sample)
	value := &apiextensionsv1.JSON{Raw: []byte(`"x"`)}
	tests := []struct {
		name string
		o    typesv1beta1.Override
		want string
	}{
		{"index out of range", typesv1beta1.Override{Path: "/spec/template/spec/containers/5/image", Value: value}, "override 0 (replace /spec/template/spec/containers/5/image)"},
		{"replace of a missing field", typesv1beta1.Override{Path: "/spec/paused", Value: value}, "does not apply to the template"},
		{"remove of a missing field", typesv1beta1.Override{Op: "remove", Path: "/metadata/labels/nope"}, "override 0 (remove /metadata/labels/nope)"},
		{"add without a value", typesv1beta1.Override{Op: "add", Path: "/metadata/labels/tier"}, "override 0 (add /metadata/labels/tier) has no value"},
		{"replace without a value", typesv1beta1.Override{Path: "/spec/replicas"}, "override 0 (replace /spec/replicas) has no value"},
		{"replace with null", typesv1beta1.Override{Path: "/spec/replicas", Value: &apiextensionsv1.JSON{Raw: []byte("null")}}, "has no value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := WithOverrides(deployments, fed, []typesv1beta1.Override{tt.o})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRenderNamespaceAndClusterScoped(t *testing.T) {
	ns := Target{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	fed := mustDecode(t, `{apiVersion: types.kubefed.io/v1beta1, kind: FederatedNamespace, metadata: {name: team-a, namespace: team-a}, spec: {}}`)
	obj, err := WithOverrides(ns, fed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if obj.GetName() != "team-a" || obj.GetNamespace() != "" || obj.GetKind() != "Namespace" {
		t.Errorf("rendered %s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
}

// A template or override cannot mark a namespace as created by Fedwarden:
// only a namespace Fedwarden created is deleted with its resource.
// A template or override cannot forge the stamp of the resource that
// wrote a copy: it is not rendered, so it is neither written nor hashed
// nor compared for drift; only a write sets it, to the writer's UID.
func TestRenderNeverCarriesTheOwnerStamp(t *testing.T) {
	cm := Target{Kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
	fed := mustDecode(t, `{apiVersion: types.kubefed.io/v1beta1, kind: FederatedConfigMap, metadata: {name: x, namespace: ns, uid: new-uid},
  spec: {template: {metadata: {annotations: {fedwarden.io/owner-uid: earlier-uid, team: pay}}, data: {a: b}}}}`)
	overrides := []typesv1beta1.Override{{Op: "add", Path: "/metadata/annotations/fedwarden.io~1owner-uid", Value: &apiextensionsv1.JSON{Raw: []byte(`"earlier-uid"`)}}}
	for name, ovs := range map[string][]typesv1beta1.Override{"template": nil, "override": overrides} {
		obj, err := WithOverrides(cm, fed, ovs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := obj.GetAnnotations(); got[typesv1beta1.AnnotationOwnerUID] != "" || got["team"] != "pay" {
			t.Errorf("%s: rendered annotations %v, want team=pay and no %s", name, got, typesv1beta1.AnnotationOwnerUID)
		}
	}
}

func TestRenderNeverCarriesTheCreatedNamespaceMark(t *testing.T) {
	ns := Target{Kind: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	fed := mustDecode(t, `{apiVersion: types.kubefed.io/v1beta1, kind: FederatedNamespace, metadata: {name: payroll, namespace: payroll},
  spec: {template: {metadata: {annotations: {fedwarden.io/created-for-propagation: "true", team: pay}}}}}`)
	overrides := []typesv1beta1.Override{{Op: "add", Path: "/metadata/annotations/fedwarden.io~1created-for-propagation", Value: &apiextensionsv1.JSON{Raw: []byte(`"true"`)}}}
	for name, ovs := range map[string][]typesv1beta1.Override{"template": nil, "override": overrides} {
		obj, err := WithOverrides(ns, fed, ovs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := obj.GetAnnotations(); got[typesv1beta1.AnnotationCreatedNamespace] != "" || got["team"] != "pay" {
			t.Errorf("%s: rendered annotations %v, want team=pay and no %s", name, got, typesv1beta1.AnnotationCreatedNamespace)
		}
	}
}

func TestContentHashIsStable(t *testing.T) {
	a := mustDecode(t, `{kind: K, b: 1, a: {d: [1, 2], c: x}}`)
	b := mustDecode(t, `{a: {c: x, d: [1, 2]}, b: 1, kind: K}`)
	if ContentHash(a.Object) != ContentHash(b.Object) {
		t.Error("the hash depends on key order")
	}
	c := mustDecode(t, `{a: {c: x, d: [2, 1]}, b: 1, kind: K}`)
	if ContentHash(a.Object) == ContentHash(c.Object) {
		t.Error("the hash ignores list order")
	}
}
