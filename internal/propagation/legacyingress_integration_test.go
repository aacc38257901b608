package propagation

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/render"
)

// TestLegacyIngressOnMember writes the Ingress rendered from KubeFed's
// sample1 FederatedIngress to a real member kube-apiserver, as dry runs: a
// strict create, and the server-side apply propagation does. The member
// takes the converted Ingress whole, and refuses the template as written.
func TestLegacyIngressOnMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed, err := localfed.Start(ctx, localfed.WithMemberNames("cluster1"), localfed.WithControllers())
	if err != nil {
		t.Fatalf("starting the federation: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping the federation: %v", err)
		}
	})
	member := fed.Member("cluster1")
	kube, err := kubernetes.NewForConfig(member.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(member.Config)
	if err != nil {
		t.Fatal(err)
	}

	federated := readFederated(t, sample1Ingress)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: federated.GetNamespace()}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	spec, err := render.ParseSpec(federated)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := render.WithOverrides(ingresses.renderTarget(), federated, spec.OverridesFor(member.Name))
	if err != nil {
		t.Fatal(err)
	}
	ingressesOf := dyn.Resource(ingresses.TargetResource).Namespace(rendered.GetNamespace())

	strict := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	created, err := ingressesOf.Create(ctx, rendered, strict)
	if err != nil {
		t.Fatalf("the member refuses the rendered Ingress: %v", err)
	}
	checkSampleBackend(t, created)

	raw, err := json.Marshal(rendered.Object)
	if err != nil {
		t.Fatal(err)
	}
	apply := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: FieldManager, Force: new(true)}
	applied, err := ingressesOf.Patch(ctx, rendered.GetName(), types.ApplyPatchType, raw, apply)
	if err != nil {
		t.Fatalf("the member refuses the rendered Ingress, applied: %v", err)
	}
	checkSampleBackend(t, applied)

	asWritten := rendered.DeepCopy()
	asWritten.Object["spec"] = render.Template(federated)["spec"]
	_, err = ingressesOf.Create(ctx, asWritten, strict)
	if err == nil || !strings.Contains(err.Error(), `unknown field "spec.rules[0].http.paths[0].backend.serviceName"`) {
		t.Errorf("the sample's template as written, created in the member: %v, want unknown field backend.serviceName", err)
	}
}

// checkSampleBackend checks the path of the sample Ingress as the member
// stored it.
func checkSampleBackend(t *testing.T, got *unstructured.Unstructured) {
	t.Helper()
	rules, _, _ := unstructured.NestedSlice(got.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("rules = %v", rules)
	}
	paths, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "http", "paths")
	if len(paths) != 1 {
		t.Fatalf("paths = %v", paths)
	}
	path := paths[0].(map[string]any)
	pathType, _, _ := unstructured.NestedString(path, "pathType")
	name, _, _ := unstructured.NestedString(path, "backend", "service", "name")
	port, _, _ := unstructured.NestedInt64(path, "backend", "service", "port", "number")
	if pathType != "ImplementationSpecific" || name != "test-service" || port != 80 {
		t.Errorf("the member has path %v, want pathType ImplementationSpecific, backend service test-service port 80", path)
	}
}

// sample1Ingress is KubeFed's sample1 FederatedIngress, in the legacy shape.
const sample1Ingress = "../../test/conformance/kubefed-v0.10.0/sample1/federatedingress.yaml"

// readFederated reads the federated resource in file.
func readFederated(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatal(err)
	}
	return u
}
