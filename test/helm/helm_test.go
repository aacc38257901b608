package helm

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// namespace is the release namespace, the control-plane namespace of the
// docs.
const namespace = "kube-federation-system"

var (
	// root is the root of the Fedwarden module; chart is the chart in it.
	root, chart string
	// helmBin is helm built by hack/tools/build.sh.
	helmBin string
	// fed is the federation whose host the rendered objects are applied
	// to; nil in -short mode.
	fed *localfed.Federation
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	var err error
	if root, err = filepath.Abs(filepath.Join("..", "..")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	chart = filepath.Join(root, "deploy", "helm", "fedwarden")
	if testing.Short() {
		// Only the tests that need neither helm nor an API server run.
		return m.Run()
	}
	binDir := os.Getenv("FEDWARDEN_BIN_DIR")
	if binDir == "" {
		binDir = filepath.Join(root, "bin")
	}
	helmBin = filepath.Join(binDir, "helm")
	if _, err := os.Stat(helmBin); err != nil {
		fmt.Fprintf(os.Stderr, "%v (build it with hack/tools/build.sh helm, or set FEDWARDEN_BIN_DIR)\n", err)
		return 1
	}
	// helm keeps its configuration and caches away from the user's.
	helmHome, err := os.MkdirTemp("", "fedwarden-helm-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(helmHome)
	for _, v := range []string{"HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"} {
		os.Setenv(v, filepath.Join(helmHome, strings.ToLower(v)))
	}
	// A host, where localfed installs Fedwarden's CRDs, and a member for the
	// controller-manager that runs with the chart's rights to propagate to.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if fed, err = localfed.Start(ctx, localfed.WithMembers(1)); err != nil {
		fmt.Fprintf(os.Stderr, "starting the local federation: %v\n", err)
		return 1
	}
	defer func() {
		if err := fed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local federation: %v\n", err)
		}
	}()
	if err := createNamespace(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// createNamespace creates the release namespace, as
// `helm install --create-namespace` does before it applies the chart.
func createNamespace(ctx context.Context) error {
	c, err := newClient(nil)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil {
		return fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	return nil
}

// needHelm skips a test in -short mode: it runs helm or needs the host.
func needHelm(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs helm and a real kube-apiserver")
	}
}

// newClient returns a client for cfg (the host's admin when nil) that knows
// fedtest.Scheme's types, and any other kind as unstructured.
func newClient(cfg *rest.Config) (client.Client, error) {
	if cfg == nil {
		cfg = fed.Host.Config
	}
	return fedtest.NewClient(cfg)
}

// helm runs helm with args and returns its standard output; a failure
// carries its standard error.
func helm(args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(helmBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// render runs `helm template` as the docs do, with extra args such as --set,
// and returns the rendered objects in order.
func render(args ...string) ([]*unstructured.Unstructured, error) {
	out, err := helm(append([]string{"template", "fedwarden", chart, "--namespace", namespace, "--include-crds"}, args...)...)
	if err != nil {
		return nil, err
	}
	return decode(out)
}

// mustRender is render that fails the test.
func mustRender(t *testing.T, args ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode splits multi-document YAML into objects, skipping empty documents.
func decode(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the rendered YAML: %w", err)
		}
		m := map[string]any{}
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("decoding a rendered document: %w\n%s", err, doc)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

// find returns the one rendered object of kind, failing the test when
// there is not exactly one.
func find(t *testing.T, objs []*unstructured.Unstructured, kind string, into any) {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("the chart renders %d objects of kind %s, want 1", len(found), kind)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(found[0].Object, into, true); err != nil {
		t.Fatalf("decoding the %s: %v", kind, err)
	}
}

// findNamed returns the rendered object of kind named name, failing the
// test when there is none.
func findNamed(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into any) {
	t.Helper()
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == kind && o.GetName() == name })
	if i < 0 {
		t.Fatalf("the chart renders no %s %s", kind, name)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objs[i].Object, into, true); err != nil {
		t.Fatalf("decoding the %s %s: %v", kind, name, err)
	}
}

func describe(o *unstructured.Unstructured) string {
	if o.GetNamespace() != "" {
		return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// dryRunApply applies obj server-side with dryRun=All, as
// `kubectl apply --server-side --dry-run=server` does, and returns what the
// API server would store.
func dryRunApply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(out), client.DryRunAll, client.FieldOwner("helm"), client.ForceOwnership)
	return out, err
}

func TestLint(t *testing.T) {
	needHelm(t)
	t.Parallel()
	for _, args := range [][]string{nil, {"--set", "metrics.serviceMonitor.enabled=true,metrics.serviceMonitor.insecureSkipVerify=true"},
		{"--set", "metrics.serviceMonitor.enabled=true,metrics.certSecret=fedwarden-metrics-tls"}, {"--set", "metrics.secure=false,metrics.serviceMonitor.enabled=true"},
		{"--set", "agentIsolation.enabled=false"},
		{"--set", "controllerManager.enabled=false,agent.enabled=true,agent.clusterName=east"},
		{"--set", "agent.enabled=true,agent.clusterName=east,agent.hostNamespace=fed"}} {
		if _, err := helm(append([]string{"lint", "--strict", chart, "--namespace", namespace}, args...)...); err != nil {
			t.Errorf("lint %v: %v", args, err)
		}
	}
}

// TestAPIServerAcceptsEveryObject applies everything `helm template
// --include-crds` renders to a real kube-apiserver with server-side dry-run.
func TestAPIServerAcceptsEveryObject(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t)
	c, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, obj := range objs {
		kinds = append(kinds, obj.GetKind())
		t.Run(describe(obj), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if obj.GetKind() == "CustomResourceDefinition" {
				checkSameCRD(ctx, t, c, obj)
				return
			}
			got, err := dryRunApply(ctx, c, obj)
			if err != nil {
				t.Fatalf("the API server refuses %s: %v", describe(obj), err)
			}
			if got.GetUID() == "" || got.GetName() != obj.GetName() {
				t.Errorf("the dry-run answer is not the object: %s", describe(got))
			}
		})
	}
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "Deployment",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		if !slices.Contains(kinds, kind) {
			t.Errorf("the chart renders no %s; it renders %v", kind, kinds)
		}
	}
	if slices.Contains(kinds, "ServiceMonitor") {
		t.Errorf("the chart renders a ServiceMonitor though metrics.serviceMonitor.enabled is false by default")
	}
}

// checkSameCRD applies a rendered CRD over the one localfed installed from
// config/crd/bases: the API server must find nothing to change.
func checkSameCRD(ctx context.Context, t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	installed := &apiextensionsv1.CustomResourceDefinition{}
	if err := c.Get(ctx, client.ObjectKey{Name: obj.GetName()}, installed); err != nil {
		t.Fatalf("the chart has CRD %s, which Fedwarden does not install: %v", obj.GetName(), err)
	}
	got, err := dryRunApply(ctx, c, obj)
	if err != nil {
		t.Fatalf("the API server refuses CRD %s: %v", obj.GetName(), err)
	}
	applied := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, applied); err != nil {
		t.Fatal(err)
	}
	if applied.Generation != installed.Generation || !equality.Semantic.DeepEqual(applied.Spec, installed.Spec) {
		t.Errorf("applying the chart's CRD %s would change the one Fedwarden installs (generation %d -> %d): run make generate",
			obj.GetName(), installed.Generation, applied.Generation)
	}
}

// TestChartCRDsAreTheGeneratedOnes checks that crds/ holds exactly the files
// controller-gen writes to config/crd/bases (make generate copies them).
func TestChartCRDsAreTheGeneratedOnes(t *testing.T) {
	t.Parallel()
	want, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := filepath.Glob(filepath.Join(chart, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("config/crd/bases holds no CRD")
	}
	names := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			out = append(out, filepath.Base(p))
		}
		return out
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("the chart's crds/ holds %v, config/crd/bases %v: run make generate", names(got), names(want))
	}
	for _, path := range want {
		w, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		g, err := os.ReadFile(filepath.Join(chart, "crds", filepath.Base(path)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(g, w) {
			t.Errorf("crds/%s differs from config/crd/bases: run make generate", filepath.Base(path))
		}
	}
}

// TestDeployment checks what a reviewer of the Deployment looks for.
func TestDeployment(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t)
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	if d.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("the pods run as ServiceAccount %q, the chart creates %q", d.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "ghcr.io/fedwarden/fedwarden:"+appVersion(t) {
		t.Errorf("image %s, want ghcr.io/fedwarden/fedwarden tagged with the appVersion %s", c.Image, appVersion(t))
	}
	for _, arg := range []string{"controller-manager", "--leader-elect", "--namespace=" + namespace, "--metrics-bind-address=:8443", "--metrics-secure",
		"--health-probe-bind-address=:8081", "--default-remediation=Enforce"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %q", c.Args, arg)
		}
	}
	if c.Args[0] != "controller-manager" {
		t.Errorf("the first argument is %q, want the controller-manager subcommand", c.Args[0])
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "probes" {
			t.Errorf("no probe GET %s on port probes: %+v", name, p)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "probes" && p.ContainerPort == 8081 }) ||
		!slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" && p.ContainerPort == 8443 }) {
		t.Errorf("ports %+v, want probes 8081 and metrics 8443", c.Ports)
	}
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--metrics-cert-dir") }) || len(c.VolumeMounts) > 0 {
		t.Errorf("with no metrics.certSecret, args %q and mounts %+v give a metrics certificate", c.Args, c.VolumeMounts)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v lack a CPU request or a memory limit", c.Resources)
	}
	pod := d.Spec.Template.Spec.SecurityContext
	sc := c.SecurityContext
	switch {
	case pod == nil || pod.RunAsNonRoot == nil || !*pod.RunAsNonRoot:
		t.Error("the pod may run as root")
	case pod.SeccompProfile == nil || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault:
		t.Error("the pod has no RuntimeDefault seccomp profile")
	case sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("the root file system is writable")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation is allowed")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Errorf("capabilities %+v, want all dropped", sc.Capabilities)
	}
}

// appVersion is the chart's appVersion, the default image tag.
func appVersion(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("reading the appVersion of Chart.yaml: %v", err)
	}
	return c.AppVersion
}

// TestRBAC checks the rights a security reviewer looks at: no wildcard,
// Secrets only in the release namespace, nothing that grants rights.
func TestRBAC(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t)
	var cr rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", "fedwarden-controller-manager", &cr)
	var role rbacv1.Role
	find(t, objs, "Role", &role)
	var crb rbacv1.ClusterRoleBinding
	findNamed(t, objs, "ClusterRoleBinding", "fedwarden-controller-manager", &crb)
	var rb rbacv1.RoleBinding
	find(t, objs, "RoleBinding", &rb)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)

	for _, want := range []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	} {
		if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, want) }) {
			t.Errorf("the ClusterRole lacks %+v, which secure metrics need to check callers", want)
		}
	}
	var reader rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", "fedwarden-metrics-reader", &reader)
	if want := []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}; !equality.Semantic.DeepEqual(reader.Rules, want) {
		t.Errorf("the metrics-reader ClusterRole grants %+v, want only get on /metrics", reader.Rules)
	}
	for _, rules := range [][]rbacv1.PolicyRule{cr.Rules, role.Rules} {
		for _, r := range rules {
			for _, s := range slices.Concat(r.Verbs, r.Resources, r.APIGroups) {
				if s == "*" {
					t.Errorf("rule %+v grants *", r)
				}
			}
			for _, v := range r.Verbs {
				// Pruning revisions past their history limit deletes them;
				// the chart's fedwarden-revisions-guard policy keeps that
				// to Fedwarden's own (TestRevisionsGuard).
				if v == "delete" && slices.Equal(r.APIGroups, []string{"apps"}) && slices.Equal(r.Resources, []string{"controllerrevisions"}) {
					continue
				}
				if slices.Contains([]string{"delete", "deletecollection", "escalate", "bind", "impersonate"}, v) {
					t.Errorf("rule %+v grants %s", r, v)
				}
			}
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("rule %+v grants non-resource URLs", r)
			}
		}
	}
	for _, r := range cr.Rules {
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("the ClusterRole grants %v on Secrets in every namespace", r.Verbs)
		}
		if slices.Contains(r.Resources, "namespaces") && (!slices.Equal(r.ResourceNames, []string{namespace}) || !slices.Equal(r.Verbs, []string{"get"})) {
			t.Errorf("the ClusterRole grants %v on namespaces %v, want only get on %s", r.Verbs, r.ResourceNames, namespace)
		}
	}
	secrets := slices.IndexFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, "secrets") })
	if secrets < 0 {
		t.Error("the Role does not let the controller-manager read the member credentials")
	} else if v := role.Rules[secrets].Verbs; !slices.Equal(v, []string{"get", "list", "watch"}) {
		t.Errorf("the Role grants %v on Secrets, want get, list, watch", v)
	}
	if role.Namespace != namespace || rb.Namespace != namespace {
		t.Errorf("the Role and RoleBinding are in %s and %s, want the release namespace %s", role.Namespace, rb.Namespace, namespace)
	}
	want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: namespace}
	for _, b := range []struct {
		subjects []rbacv1.Subject
		ref      rbacv1.RoleRef
		role     string
	}{{crb.Subjects, crb.RoleRef, cr.Name}, {rb.Subjects, rb.RoleRef, role.Name}} {
		if !slices.Equal(b.subjects, []rbacv1.Subject{want}) || b.ref.Name != b.role {
			t.Errorf("a binding gives %s to %+v, want %s to the ServiceAccount %s", b.ref.Name, b.subjects, b.role, sa.Name)
		}
	}
}

// TestDependenciesRBAC: dependencies.enabled passes
// --propagate-dependencies and grants what its stage needs, and no more:
// reading the four kinds a pod template names, and writing and deleting
// their federated kinds. Off (TestRBAC), neither is granted.
func TestDependenciesRBAC(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t, "--set", "dependencies.enabled=true")
	var cr rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", "fedwarden-controller-manager", &cr)
	want := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "serviceaccounts", "persistentvolumeclaims"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"types.kubefed.io"}, Resources: []string{"federatedconfigmaps", "federatedsecrets", "federatedserviceaccounts", "federatedpersistentvolumeclaims"},
			Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	}
	for _, w := range want {
		if !slices.ContainsFunc(cr.Rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, w) }) {
			t.Errorf("the ClusterRole lacks %+v", w)
		}
	}
	for _, r := range cr.Rules {
		if slices.Contains(r.Verbs, "delete") && !equality.Semantic.DeepEqual(r, want[1]) && !slices.Equal(r.Resources, []string{"controllerrevisions"}) {
			t.Errorf("rule %+v grants delete", r)
		}
	}
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	if args := d.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--propagate-dependencies") {
		t.Errorf("args %q lack --propagate-dependencies", args)
	}
	var off appsv1.Deployment
	find(t, mustRender(t), "Deployment", &off)
	if args := off.Spec.Template.Spec.Containers[0].Args; slices.Contains(args, "--propagate-dependencies") {
		t.Errorf("by default, args %q have --propagate-dependencies", args)
	}
}

// TestValues checks that settings reach the controller-manager, and that
// wrong ones fail at `helm template` rather than in a crash-looping pod.
func TestValues(t *testing.T) {
	needHelm(t)
	t.Parallel()
	tests := []struct {
		name     string
		set      []string
		wantArgs []string
		wantErr  string
	}{
		{name: "remediation Alert", set: []string{"remediation.default=Alert"}, wantArgs: []string{"--default-remediation=Alert"}},
		{name: "remediation unknown", set: []string{"remediation.default=Heal"}, wantErr: `remediation.default must be Enforce or Alert, not "Heal"`},
		{name: "tuning", set: []string{"controllerManager.propagationWorkers=4", "controllerManager.kubeAPIQPS=50.5",
			"controllerManager.kubeAPIBurst=100", "controllerManager.clusterHealth.period=30s", "controllerManager.resyncPeriod=0s",
			"controllerManager.plugins=*\\,-Capacity"},
			wantArgs: []string{"--propagation-workers=4", "--kube-api-qps=50.5", "--kube-api-burst=100", "--cluster-health-period=30s",
				"--resync-period=0s", "--plugins=*,-Capacity"}},
		{name: "extra args", set: []string{"controllerManager.extraArgs={--zap-encoder=console}"}, wantArgs: []string{"--zap-encoder=console"}},
		{name: "federated resource without group", set: []string{"rbac.federatedResources={federatedwidgets}"}, wantErr: `"federatedwidgets" is not <plural>.<group>`},
		{name: "existing ServiceAccount without name", set: []string{"serviceAccount.create=false"}, wantErr: "serviceAccount.name must name an existing ServiceAccount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var args []string
			for _, s := range tt.set {
				args = append(args, "--set", s)
			}
			objs, err := render(args...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("helm template %v: error %v, want one saying %q", args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var d appsv1.Deployment
			find(t, objs, "Deployment", &d)
			got := d.Spec.Template.Spec.Containers[0].Args
			for _, arg := range tt.wantArgs {
				if !slices.Contains(got, arg) {
					t.Errorf("args %q lack %q", got, arg)
				}
			}
		})
	}
}

// TestServiceMonitor renders the chart with the ServiceMonitor, checks that
// it scrapes the metrics Service over HTTPS with Prometheus's token,
// verifying the certificate when it can, and that a kube-apiserver with the
// Prometheus Operator's ServiceMonitor CRD accepts it in every mode.
func TestServiceMonitor(t *testing.T) {
	needHelm(t)
	t.Parallel()
	const certSecret = "fedwarden-metrics-tls"
	objs := mustRender(t, "--set", "metrics.serviceMonitor.enabled=true,metrics.certSecret="+certSecret, "--set", "metrics.serviceMonitor.labels.release=prometheus")
	var svc corev1.Service
	find(t, objs, "Service", &svc)
	sm := serviceMonitor(t, objs)
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != namespace || sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor %s %s with labels %v, want monitoring.coreos.com/v1 in %s labelled release=prometheus",
			sm.GetAPIVersion(), describe(sm), sm.GetLabels(), namespace)
	}
	selector, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("the ServiceMonitor selects %s=%s, which the metrics Service (labels %v) lacks", k, v, svc.Labels)
		}
	}
	endpoint := smEndpoint(t, sm)
	if endpoint["port"] != "metrics" || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].AppProtocol == nil || *svc.Spec.Ports[0].AppProtocol != "https" {
		t.Errorf("the ServiceMonitor scrapes %v, want the Service's port named metrics, which is https: %+v", endpoint, svc.Spec.Ports)
	}
	// Prometheus verifies the certificate with the CA of the Secret, for
	// the name of the Service, and presents its own ServiceAccount's token.
	wantTLS := map[string]any{"serverName": svc.Name + "." + namespace + ".svc", "ca": map[string]any{"secret": map[string]any{"name": certSecret, "key": "ca.crt"}}}
	if endpoint["scheme"] != "https" || endpoint["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" ||
		!equality.Semantic.DeepEqual(endpoint["tlsConfig"], wantTLS) {
		t.Errorf("endpoint %v, want https, Prometheus's token and tlsConfig %v", endpoint, wantTLS)
	}
	// The host has no Prometheus Operator: the test installs its
	// ServiceMonitor CRD, so that the API server checks the object against
	// the operator's schema.
	c := installServiceMonitorCRD(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	checkServiceMonitorAccepted(ctx, t, c, sm)
	// The check can fail: the same API server refuses ServiceMonitors that
	// break the schema.
	for _, tt := range []struct {
		name, field string
		value       any
	}{
		{"endpoint port a number", "port", int64(8080)},
		{"interval not a duration", "interval", "30 seconds"},
		{"scheme neither http nor https", "scheme", "ftp"},
		{"misspelt field", "portName", "metrics"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			broken := sm.DeepCopy()
			endpoints, _, _ := unstructured.NestedSlice(broken.Object, "spec", "endpoints")
			endpoints[0].(map[string]any)[tt.field] = tt.value
			if err := unstructured.SetNestedSlice(broken.Object, endpoints, "spec", "endpoints"); err != nil {
				t.Fatal(err)
			}
			_, err := dryRunApply(ctx, c, broken)
			if err == nil || meta.IsNoMatchError(err) || !strings.Contains(err.Error(), "spec.endpoints[0]."+tt.field) {
				t.Errorf("the API server answers %v to a ServiceMonitor whose endpoint has %s: %v, want a refusal about %s", err, tt.field, tt.value, tt.field)
			}
		})
	}
	// The other modes.
	for _, tt := range []struct {
		name, set string
		want      map[string]any // fields of the endpoint; nil values must be absent
		wantErr   string
	}{
		{name: "self-signed certificate not accepted", set: "", wantErr: "self-signed certificate, which Prometheus cannot verify"},
		{name: "self-signed certificate accepted unverified", set: "metrics.serviceMonitor.insecureSkipVerify=true",
			want: map[string]any{"scheme": "https", "tlsConfig": map[string]any{"insecureSkipVerify": true}}},
		{name: "own TLS settings", set: "metrics.serviceMonitor.tlsConfig.caFile=/etc/prometheus/ca.crt,metrics.serviceMonitor.tlsConfig.serverName=metrics.example",
			want: map[string]any{"scheme": "https", "tlsConfig": map[string]any{"caFile": "/etc/prometheus/ca.crt", "serverName": "metrics.example"}}},
		{name: "token from a Secret", set: "metrics.certSecret=" + certSecret + ",metrics.serviceMonitor.authorization.type=Bearer,metrics.serviceMonitor.authorization.credentials.name=prom-token,metrics.serviceMonitor.authorization.credentials.key=token",
			want: map[string]any{"bearerTokenFile": nil, "authorization": map[string]any{"type": "Bearer", "credentials": map[string]any{"name": "prom-token", "key": "token"}}}},
		{name: "plain HTTP", set: "metrics.secure=false", want: map[string]any{"scheme": "http", "tlsConfig": nil, "bearerTokenFile": nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set := "metrics.serviceMonitor.enabled=true"
			if tt.set != "" {
				set += "," + tt.set
			}
			objs, err := render("--set", set)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("helm template --set %s: %v, want an error saying %q", set, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sm := serviceMonitor(t, objs)
			endpoint := smEndpoint(t, sm)
			for k, w := range tt.want {
				if got, ok := endpoint[k]; (w == nil && ok) || (w != nil && !equality.Semantic.DeepEqual(got, w)) {
					t.Errorf("endpoint %s = %v, want %v", k, got, w)
				}
			}
			checkServiceMonitorAccepted(ctx, t, c, sm)
		})
	}
}

// serviceMonitor returns the rendered ServiceMonitor.
func serviceMonitor(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	i := slices.IndexFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "ServiceMonitor" })
	if i < 0 {
		t.Fatal("metrics.serviceMonitor.enabled=true renders no ServiceMonitor")
	}
	return objs[i]
}

// smEndpoint returns the one endpoint of a ServiceMonitor.
func smEndpoint(t *testing.T, sm *unstructured.Unstructured) map[string]any {
	t.Helper()
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has endpoints %v, want one", endpoints)
	}
	return endpoints[0].(map[string]any)
}

// checkServiceMonitorAccepted applies sm with server-side dry-run: the API
// server must keep its spec as it is.
func checkServiceMonitorAccepted(ctx context.Context, t *testing.T, c client.Client, sm *unstructured.Unstructured) {
	t.Helper()
	got, err := dryRunApply(ctx, c, sm)
	if err != nil {
		t.Fatalf("the API server refuses the ServiceMonitor: %v", err)
	}
	if !equality.Semantic.DeepEqual(got.Object["spec"], sm.Object["spec"]) {
		t.Errorf("the API server would store spec %v, not the rendered %v: the schema drops or changes fields", got.Object["spec"], sm.Object["spec"])
	}
}

// serviceMonitorCRD is the Prometheus Operator's ServiceMonitor CRD; its
// header says where it comes from.
const serviceMonitorCRD = "testdata/monitoring.coreos.com_servicemonitors.yaml"

// installServiceMonitorCRD installs the Prometheus Operator's ServiceMonitor
// CRD in the host, removes it when the test ends, and returns a client once
// the host serves the kind.
func installServiceMonitorCRD(t *testing.T) client.Client {
	t.Helper()
	data, err := os.ReadFile(serviceMonitorCRD)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("%s holds %d objects, want one CustomResourceDefinition", serviceMonitorCRD, len(objs))
	}
	crd := objs[0]
	admin, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(crd), client.FieldOwner("fedwarden-helm-test"), client.ForceOwnership); err != nil {
		t.Fatalf("installing CRD %s: %v", crd.GetName(), err)
	}
	t.Cleanup(func() {
		// The other tests see the host without the CRD again.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := client.IgnoreNotFound(admin.Delete(ctx, crd)); err != nil {
			t.Errorf("removing CRD %s: %v", crd.GetName(), err)
			return
		}
		err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			err := admin.Get(ctx, client.ObjectKeyFromObject(crd), &apiextensionsv1.CustomResourceDefinition{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if err != nil {
			t.Errorf("waiting for CRD %s to go: %v", crd.GetName(), err)
		}
	})
	var c client.Client
	poll.Eventually(t, time.Minute, "the host to serve monitoring.coreos.com/v1 ServiceMonitors", func(ctx context.Context) (bool, string) {
		installed := &apiextensionsv1.CustomResourceDefinition{}
		if err := admin.Get(ctx, client.ObjectKey{Name: crd.GetName()}, installed); err != nil {
			return false, err.Error()
		}
		established := slices.ContainsFunc(installed.Status.Conditions, func(cond apiextensionsv1.CustomResourceDefinitionCondition) bool {
			return cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
		})
		if !established {
			return false, fmt.Sprintf("conditions %+v", installed.Status.Conditions)
		}
		// A new client discovers the kind afresh.
		if c, err = newClient(nil); err != nil {
			return false, err.Error()
		}
		if _, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: "monitoring.coreos.com", Kind: "ServiceMonitor"}, "v1"); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	return c
}
