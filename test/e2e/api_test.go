package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/config/crd"
)

// conformance is where the manifests Fedwarden must accept unchanged live.
const conformance = "../conformance"

func TestCRDsAreEstablishedAndServed(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	ctx := t.Context()
	c := hostClient(t)
	want, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 5 {
		t.Fatalf("only %d CRDs are embedded; want at least FederatedCluster, FederatedTypeConfig, ClusterPropagatedVersion, FederatedDeployment and ReplicaSchedulingPreference", len(want))
	}
	for _, w := range want {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, client.ObjectKey{Name: w.Name}, got); err != nil {
			t.Errorf("CRD %s: %v", w.Name, err)
			continue
		}
		for _, cond := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
			if !crdCondition(got, cond) {
				t.Errorf("CRD %s is not %s: %+v", w.Name, cond, got.Status.Conditions)
			}
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: w.Spec.Group, Version: w.Spec.Versions[0].Name, Kind: w.Spec.Names.ListKind})
		if err := c.List(ctx, list); err != nil {
			t.Errorf("listing %s: %v", w.Spec.Names.Plural, err)
		}
	}
}

func crdCondition(c *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == t {
			return cond.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// TestSpecificationCPVExample writes the specification's CPV example, its
// status through the status subresource, and reads both back unchanged.
func TestSpecificationCPVExample(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	ctx := t.Context()
	c := hostClient(t)
	want := loadManifest(t, "seed/cpv-example.yaml")
	obj := want.DeepCopy()
	if err := c.Create(ctx, obj); err != nil {
		t.Fatalf("creating the CPV example: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
	obj.Object["status"] = want.Object["status"]
	if err := c.Status().Update(ctx, obj); err != nil {
		t.Fatalf("writing the CPV example's status: %v", err)
	}
	got := readBack(t, c, want)
	for _, field := range []string{"spec", "status"} {
		sameJSON(t, field, got.Object[field], want.Object[field])
	}
}

// TestKubeFedExamples applies KubeFed's own example manifests, for the kinds
// the host serves without enabling a type, and reads them back unchanged.
func TestKubeFedExamples(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	ctx := t.Context()
	c := hostClient(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "test-namespace"}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, file := range []string{
		"kubefed-v0.10.0/sample1/federateddeployment.yaml",
		"kubefed-v0.10.0/scheduling/federateddeployment-rsp.yaml",
	} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			want := loadManifest(t, file)
			if err := c.Create(ctx, want.DeepCopy()); err != nil {
				t.Fatalf("applying KubeFed's %s: %v", file, err)
			}
			got := readBack(t, c, want)
			sameJSON(t, "spec", got.Object["spec"], want.Object["spec"])
		})
	}
}

// sameJSON reports an error when got and want differ as JSON documents
// (numbers decoded from YAML and from the API server differ only in Go type).
func sameJSON(t *testing.T, field string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) != string(w) {
		t.Errorf("%s read back differs:\n got: %s\nwant: %s", field, g, w)
	}
}

func loadManifest(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformance, name))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("decoding %s: %v", name, err)
	}
	return obj
}

func readBack(t *testing.T, c client.Client, want *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(want.GroupVersionKind())
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(want), got); err != nil {
		t.Fatalf("reading back %s %s: %v", want.GetKind(), want.GetName(), err)
	}
	return got
}

// rejected asserts that the host refuses obj as invalid, with a message that
// names field and says why.
func rejected(t *testing.T, err error, field, why string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the host accepted the object; want it rejected at %s", field)
	}
	if !apierrors.IsInvalid(err) {
		t.Fatalf("error is not Invalid: %v", err)
	}
	if !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), why) {
		t.Fatalf("error %q does not name field %q with %q", err, field, why)
	}
}
