package enable_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/disable"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/cli/federate"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/streams"
)

const directives = "../../../test/conformance/kubefed-v0.10.0/enabletypedirectives"

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// TestEnableFederateDisable enables KubeFed's sample types in a real host,
// federates objects of them, and disables them again.
func TestEnableFederateDisable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	tb := &testBed{host: clitest.Client(t, fed.Host.Kubeconfig), flags: []string{"--host-kubeconfig", fed.Host.Kubeconfig}}

	tb.checkEnable(ctx, t)
	tb.checkFederate(ctx, t)
	tb.checkDisable(ctx, t)
}

type testBed struct {
	host  client.Client
	flags []string
}

// run runs a command with args and the test bed's flags, and returns its
// output and the exit code root.Execute would give.
func (tb *testBed) run(newCommand func(streams.IO) *cobra.Command, args ...string) (stdout, stderr string, code int) {
	return clitest.Execute(newCommand, slices.Concat(args, tb.flags)...)
}

// expect runs a command and checks its exit code and that stderr holds each of want.
func (tb *testBed) expect(t *testing.T, code int, want []string, newCommand func(streams.IO) *cobra.Command, args ...string) (stdout string) {
	t.Helper()
	stdout, stderr, got := tb.run(newCommand, args...)
	if got != code {
		t.Fatalf("%s %s: exit code %d, want %d; stderr:\n%s", newCommand(streams.IO{}).Name(), strings.Join(args, " "), got, code, stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s %s: stderr does not hold %q:\n%s", newCommand(streams.IO{}).Name(), strings.Join(args, " "), w, stderr)
		}
	}
	return stdout
}

func (tb *testBed) checkEnable(ctx context.Context, t *testing.T) {
	shippedVersion := tb.resourceVersion(ctx, t, crdGVK, "", "federateddeployments.types.kubefed.io")
	tb.expect(t, 0, []string{
		"configmaps: created CustomResourceDefinition federatedconfigmaps.types.kubefed.io",
		"configmaps: CustomResourceDefinition federatedconfigmaps.types.kubefed.io is Established",
		"configmaps: created FederatedTypeConfig configmaps",
		"deployments.apps: kept CustomResourceDefinition federateddeployments.types.kubefed.io, which ships with Fedwarden",
		"deployments.apps: created FederatedTypeConfig deployments.apps",
		"clusterroles.rbac.authorization.k8s.io: enabled",
		"services: enabled: create FederatedService resources, or federate an existing Service with `fedwarden federate service NAME`",
	}, enable.NewCommand, "-f", directives)
	if v := tb.resourceVersion(ctx, t, crdGVK, "", "federateddeployments.types.kubefed.io"); v != shippedVersion {
		t.Errorf("enable changed the FederatedDeployment CRD: resourceVersion %s, then %s", shippedVersion, v)
	}
	for _, name := range []string{"configmaps", "secrets", "services", "serviceaccounts", "namespaces", "jobs.batch",
		"ingresses.networking.k8s.io", "deployments.apps", "replicasets.apps", "clusterroles.rbac.authorization.k8s.io"} {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := tb.host.Get(ctx, client.ObjectKey{Name: name}, ftc); err != nil {
			t.Errorf("FederatedTypeConfig %s: %v", name, err)
		}
	}

	// Again: nothing changes.
	versions := tb.resourceVersion(ctx, t, crdGVK, "", "federatedconfigmaps.types.kubefed.io")
	tb.expect(t, 0, []string{"configmaps: unchanged CustomResourceDefinition", "configmaps: unchanged FederatedTypeConfig configmaps"},
		enable.NewCommand, "cm")
	if v := tb.resourceVersion(ctx, t, crdGVK, "", "federatedconfigmaps.types.kubefed.io"); v != versions {
		t.Errorf("a second enable changed the CRD")
	}

	// Printing creates nothing.
	out := tb.expect(t, 0, nil, enable.NewCommand, "StatefulSet", "-o", "yaml")
	docs := strings.Split(out, "\n---\n")
	if len(docs) != 2 || !strings.Contains(docs[0], "name: federatedstatefulsets.types.kubefed.io") || !strings.Contains(docs[1], "kind: FederatedTypeConfig") {
		t.Errorf("enable -o yaml printed:\n%.2000s", out)
	}
	if v := tb.resourceVersion(ctx, t, crdGVK, "", "federatedstatefulsets.types.kubefed.io"); v != "" {
		t.Error("enable -o yaml created the CRD")
	}

	tb.expect(t, 2, []string{`unknown resource "configmapz": the host serves no such resource; did you mean configmaps?`}, enable.NewCommand, "configmapz")
	tb.expect(t, 2, []string{"federateddeployments.types.kubefed.io is a Fedwarden kind"}, enable.NewCommand, "fdeploy")
}

func (tb *testBed) checkFederate(ctx context.Context, t *testing.T) {
	ns := "test-namespace"
	tb.create(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	tb.create(ctx, t, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-file", Namespace: ns, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		Data: map[string]string{"index.html": "Hello from Kubernetes Cluster Federation!"},
	})
	tb.create(ctx, t, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "nginx", Namespace: ns},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}, Selector: map[string]string{"app": "nginx"}},
	})

	tb.expect(t, 0, []string{"created FederatedConfigMap test-namespace/web-file"},
		federate.NewCommand, "configmap", "web-file", "-n", ns, "--clusters", "cluster1,cluster2")
	got := tb.get(ctx, t, "FederatedConfigMap", ns, "web-file")
	wantSpec := map[string]any{
		"template":  map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}}, "data": map[string]any{"index.html": "Hello from Kubernetes Cluster Federation!"}},
		"placement": map[string]any{"clusters": []any{map[string]any{"name": "cluster1"}, map[string]any{"name": "cluster2"}}},
	}
	if a, b := toYAML(t, got.Object["spec"]), toYAML(t, wantSpec); a != b {
		t.Errorf("FederatedConfigMap spec\n%s\nwant\n%s", a, b)
	}
	tb.expect(t, 0, []string{"unchanged FederatedConfigMap test-namespace/web-file"},
		federate.NewCommand, "cm", "web-file", "-n", ns, "--clusters", "cluster1,cluster2")

	tb.expect(t, 0, []string{"created FederatedService test-namespace/nginx"}, federate.NewCommand, "svc", "nginx", "-n", ns, "--all-clusters")
	svc := tb.get(ctx, t, "FederatedService", ns, "nginx")
	if _, found, _ := unstructured.NestedFieldNoCopy(svc.Object, "spec", "template", "spec", "clusterIP"); found {
		t.Errorf("the FederatedService's template has the host's clusterIP: %v", svc.Object["spec"])
	}
	if sel, found, _ := unstructured.NestedMap(svc.Object, "spec", "placement", "clusterSelector"); !found || len(sel) != 0 {
		t.Errorf("--all-clusters: placement %v", svc.Object["spec"])
	}

	tb.expect(t, 0, []string{"created FederatedNamespace test-namespace/test-namespace"},
		federate.NewCommand, "namespace", ns, "--cluster-selector", "env=prod")

	out := tb.expect(t, 0, nil, federate.NewCommand, "configmap", "web-file", "-n", ns, "--all-clusters", "-o", "json")
	if !strings.Contains(out, `"kind": "FederatedConfigMap"`) || !strings.Contains(out, `"clusterSelector": {}`) {
		t.Errorf("federate -o json printed:\n%s", out)
	}

	tb.expect(t, 2, []string{"statefulsets.apps is not enabled: there is no FederatedTypeConfig statefulsets.apps; run `fedwarden enable statefulsets.apps` first"},
		federate.NewCommand, "statefulset", "db", "-n", ns, "--all-clusters")
	tb.expect(t, 2, []string{"ConfigMap test-namespace/nope is not in the host"}, federate.NewCommand, "configmap", "nope", "-n", ns, "--all-clusters")
}

func (tb *testBed) checkDisable(ctx context.Context, t *testing.T) {
	tb.expect(t, 0, []string{"configmaps: propagation Disabled in FederatedTypeConfig configmaps", "copies in member clusters are left as they are"},
		disable.NewCommand, "configmap")
	if p := tb.propagation(ctx, t, "configmaps"); p != corev1beta1.Disabled {
		t.Errorf("propagation %s after disable", p)
	}
	tb.expect(t, 0, []string{"configmaps: configured FederatedTypeConfig configmaps (propagation Enabled again)"}, enable.NewCommand, "configmaps")
	if p := tb.propagation(ctx, t, "configmaps"); p != corev1beta1.Enabled {
		t.Errorf("propagation %s after enable", p)
	}

	tb.expect(t, 1, []string{"1 FederatedConfigMap resource exists in the host (test-namespace/web-file)", "or pass --force"},
		disable.NewCommand, "configmaps", "--delete-crd")
	tb.expect(t, 0, []string{"deleted CustomResourceDefinition federatedconfigmaps.types.kubefed.io", "deleted FederatedTypeConfig configmaps"},
		disable.NewCommand, "configmaps", "--delete-crd", "--force")
	if v := tb.resourceVersion(ctx, t, crdGVK, "", "federatedconfigmaps.types.kubefed.io"); v != "" {
		t.Error("the CRD is still there")
	}
	tb.expect(t, 2, []string{"configmaps is not enabled"}, disable.NewCommand, "configmaps")

	tb.expect(t, 2, []string{"federateddeployments.types.kubefed.io ships with Fedwarden and is not deleted"}, disable.NewCommand, "deploy", "--delete-crd")
	tb.expect(t, 0, []string{"deleted FederatedTypeConfig services", "1 FederatedService resource remains in the host"}, disable.NewCommand, "services", "--delete")
	if v := tb.resourceVersion(ctx, t, crdGVK, "", "federatedservices.types.kubefed.io"); v == "" {
		t.Error("--delete deleted the CRD")
	}
	tb.expect(t, 2, []string{`unknown resource "nothing"`, "enabled types: "}, disable.NewCommand, "nothing")
}

func (tb *testBed) create(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := tb.host.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func (tb *testBed) get(ctx context.Context, t *testing.T, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: kind})
	if err := tb.host.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// resourceVersion returns the object's resourceVersion, or "" if it does not exist.
func (tb *testBed) resourceVersion(ctx context.Context, t *testing.T, gvk schema.GroupVersionKind, ns, name string) string {
	t.Helper()
	meta := &metav1.PartialObjectMetadata{}
	meta.SetGroupVersionKind(gvk)
	err := tb.host.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, meta)
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return meta.ResourceVersion
}

func (tb *testBed) propagation(ctx context.Context, t *testing.T, name string) corev1beta1.Mode {
	t.Helper()
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := tb.host.Get(ctx, client.ObjectKey{Name: name}, ftc); err != nil {
		t.Fatal(err)
	}
	return ftc.Spec.Propagation
}

func toYAML(t *testing.T, v any) string {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
