package federatedtype_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// conformance holds KubeFed's example manifests.
const conformance = "../../test/conformance/kubefed-v0.10.0"

// kubefedTypes are the resources KubeFed's sample enables, as its
// EnableTypeDirectives name them.
var kubefedTypes = []string{
	"configmaps", "secrets", "services", "serviceaccounts", "namespaces",
	"jobs.batch", "ingresses.networking.k8s.io", "deployments.apps", "replicasets.apps",
	"clusterroles.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
}

// hostAPI are the clients of the host the test uses.
type hostAPI struct {
	disco   *discovery.DiscoveryClient
	crds    apiextensionsclient.Interface
	dynamic dynamic.Interface
	client  client.Client
}

// TestGeneratedCRDs enables KubeFed's sample types on a real kube-apiserver
// and checks that their CRDs are Established, their FederatedTypeConfigs
// accepted, and KubeFed's sample federated resources accepted unchanged.
func TestGeneratedCRDs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed, err := localfed.Start(ctx, localfed.WithMembers(0), localfed.WithControllers())
	if err != nil {
		t.Fatalf("starting the federation: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping the federation: %v", err)
		}
	})
	host := newHostAPI(t, fed.Host)

	t.Run("KubeFed sample types are Established", func(t *testing.T) {
		for _, arg := range kubefedTypes {
			enable(ctx, t, host, arg)
		}
	})
	t.Run("KubeFed sample resources are accepted unchanged", func(t *testing.T) {
		createNamespace(ctx, t, fed.Host, "test-namespace")
		checkSamples(ctx, t, host)
	})
	t.Run("template labels and annotations are kept", func(t *testing.T) {
		checkMetadataKept(ctx, t, host)
	})
	t.Run("a template without a schema keeps every field", func(t *testing.T) {
		checkPreserveUnknown(ctx, t, host)
	})
}

func newHostAPI(t *testing.T, host *localfed.Cluster) *hostAPI {
	t.Helper()
	cfg := rest.CopyConfig(host.Config)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	crds, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	return &hostAPI{disco: disco, crds: crds, dynamic: dyn, client: c}
}

// enable resolves arg, builds its CRD from the host's OpenAPI and its
// FederatedTypeConfig, creates both and waits until the CRD is
// Established.
func enable(ctx context.Context, t *testing.T, host *hostAPI, arg string) {
	t.Helper()
	target, err := federatedtype.Resolve(ctx, host.disco, arg, "")
	if err != nil {
		t.Fatalf("resolving %s: %v", arg, err)
	}
	typ := federatedtype.Type{Target: target}
	crd, err := federatedtype.Shipped(typ)
	if err != nil {
		t.Fatal(err)
	}
	if crd == nil {
		template, err := federatedtype.FetchTemplateSchema(ctx, host.disco, target)
		if err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		if crd, err = federatedtype.NewCRD(typ, template); err != nil {
			t.Fatalf("%s: %v", arg, err)
		}
		createCRD(ctx, t, host, crd)
	}
	waitEstablished(ctx, t, host, crd.Name)
	ftc := federatedtype.NewTypeConfig(typ)
	if err := host.client.Create(ctx, ftc); err != nil {
		t.Fatalf("creating FederatedTypeConfig %s: %v", ftc.Name, err)
	}
}

func createCRD(ctx context.Context, t *testing.T, host *hostAPI, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if _, err := host.crds.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating CRD %s: %v", crd.Name, err)
	}
}

func waitEstablished(ctx context.Context, t *testing.T, host *hostAPI, name string) {
	t.Helper()
	var last *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		crd, err := host.crds.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = crd
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s is not Established: %v; status %+v", name, err, last)
	}
}

func createNamespace(ctx context.Context, t *testing.T, cluster *localfed.Cluster, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// checkSamples creates every federated resource of KubeFed's sample1, as
// a server-side dry run with strict field validation (as kubectl does): it
// must be accepted without a change, not even a dropped field.
func checkSamples(ctx context.Context, t *testing.T, host *hostAPI) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(conformance, "sample1", "federated*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no sample files: %v", err)
	}
	for _, file := range files {
		if filepath.Base(file) == "federateddeployment.yaml" {
			continue // its CRD is Fedwarden's own
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			obj := readManifest(t, file)
			got, err := createDryRun(ctx, host, obj, metav1.FieldValidationStrict)
			if err != nil {
				t.Fatalf("%s is refused: %v", file, err)
			}
			if filepath.Base(file) == "federatedingress.yaml" {
				checkIngressSample(ctx, t, host, obj, got)
			}
		})
	}
}

// checkIngressSample: KubeFed's sample Ingress has the shape of
// extensions/v1beta1 (backend.serviceName and servicePort, no pathType),
// which the template of a networking.k8s.io/v1 Ingress takes beside the v1
// shape, for propagation to convert. The sample is kept as written; the
// same resource in the v1 shape is accepted too, and so is a legacy
// spec.backend.
func checkIngressSample(ctx context.Context, t *testing.T, host *hostAPI, obj, got *unstructured.Unstructured) {
	t.Helper()
	written, _, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "template")
	readBack, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "template")
	// Compared as JSON: the manifest's numbers are float64, the server's int64.
	want, _ := json.Marshal(written)
	if j, _ := json.Marshal(readBack); string(j) != string(want) {
		t.Errorf("the sample Ingress's template is read back as %s, want %s", j, want)
	}
	v1 := obj.DeepCopy()
	path := map[string]any{
		"pathType": "ImplementationSpecific",
		"backend":  map[string]any{"service": map[string]any{"name": "test-service", "port": map[string]any{"number": int64(80)}}},
	}
	rule := map[string]any{"host": "ingress.example.com", "http": map[string]any{"paths": []any{path}}}
	if err := unstructured.SetNestedSlice(v1.Object, []any{rule}, "spec", "template", "spec", "rules"); err != nil {
		t.Fatal(err)
	}
	if _, err := createDryRun(ctx, host, v1, metav1.FieldValidationStrict); err != nil {
		t.Errorf("the sample Ingress in the networking.k8s.io/v1 shape is refused: %v", err)
	}
	legacyDefault := obj.DeepCopy()
	backend := map[string]any{"serviceName": "test-service", "servicePort": "http"}
	if err := unstructured.SetNestedMap(legacyDefault.Object, backend, "spec", "template", "spec", "backend"); err != nil {
		t.Fatal(err)
	}
	if _, err := createDryRun(ctx, host, legacyDefault, metav1.FieldValidationStrict); err != nil {
		t.Errorf("the sample Ingress with a legacy spec.backend is refused: %v", err)
	}
}

func createDryRun(ctx context.Context, host *hostAPI, obj *unstructured.Unstructured, validation string) (*unstructured.Unstructured, error) {
	gvr, err := resourceOf(host, obj)
	if err != nil {
		return nil, err
	}
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: validation}
	return host.dynamic.Resource(gvr).Namespace(obj.GetNamespace()).Create(ctx, obj, opts)
}

func readManifest(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return obj
}

// checkMetadataKept creates a FederatedConfigMap whose template has labels
// and annotations, and reads them back.
func checkMetadataKept(ctx context.Context, t *testing.T, host *hostAPI) {
	t.Helper()
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedConfigMap",
		"metadata":   map[string]any{"name": "labelled", "namespace": "test-namespace"},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"note": "kept"}},
				"data":     map[string]any{"a": "b"},
			},
			"placement": map[string]any{"clusterSelector": map[string]any{}},
		},
	}}
	if err := host.client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(obj.GroupVersionKind())
	if err := host.client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	labels, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "metadata", "annotations")
	data, _, _ := unstructured.NestedStringMap(got.Object, "spec", "template", "data")
	if labels["app"] != "web" || annotations["note"] != "kept" || data["a"] != "b" {
		t.Errorf("template read back: %v", got.Object["spec"])
	}
	wrongName := obj.DeepCopy()
	wrongName.SetName("other")
	_ = unstructured.SetNestedField(wrongName.Object, "not-other", "spec", "template", "metadata", "name")
	if _, err := createDryRun(ctx, host, wrongName, ""); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "must be empty or the FederatedConfigMap's name") {
		t.Errorf("a template named otherwise: %v, want the name rule", err)
	}
}

// checkPreserveUnknown installs, in another group, a FederatedSecret whose
// template has no schema, as when the host publishes no OpenAPI v3, and
// checks that any field is kept.
func checkPreserveUnknown(ctx context.Context, t *testing.T, host *hostAPI) {
	t.Helper()
	target, err := federatedtype.Resolve(ctx, host.disco, "secrets", "")
	if err != nil {
		t.Fatal(err)
	}
	typ := federatedtype.Type{Target: target, FederatedGroup: "untyped.example.com"}
	crd, err := federatedtype.NewCRD(typ, nil)
	if err != nil {
		t.Fatal(err)
	}
	createCRD(ctx, t, host, crd)
	waitEstablished(ctx, t, host, crd.Name)
	obj := readManifest(t, filepath.Join(conformance, "sample1", "federatedsecret.yaml"))
	obj.SetAPIVersion("untyped.example.com/v1beta1")
	_ = unstructured.SetNestedField(obj.Object, "anything", "spec", "template", "unknownField")
	if err := waitDiscoverable(ctx, host, typ); err != nil {
		t.Fatal(err)
	}
	got, err := createDryRun(ctx, host, obj, metav1.FieldValidationStrict)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if v, _, _ := unstructured.NestedString(got.Object, "spec", "template", "unknownField"); v != "anything" {
		t.Errorf("template read back: %v", got.Object["spec"])
	}
}

// waitDiscoverable waits until discovery lists typ's Federated<Kind>.
func waitDiscoverable(ctx context.Context, host *hostAPI, typ federatedtype.Type) error {
	gv := typ.FederatedGroupVersion().String()
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		list, err := host.disco.ServerResourcesForGroupVersion(gv)
		if err != nil {
			return false, nil
		}
		return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Kind == typ.FederatedKind() }), nil
	})
}

// resourceOf maps obj's kind to its resource through discovery.
func resourceOf(host *hostAPI, obj *unstructured.Unstructured) (schema.GroupVersionResource, error) {
	gvk := obj.GroupVersionKind()
	list, err := host.disco.ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range list.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, errors.New("no resource of kind " + gvk.String())
}
