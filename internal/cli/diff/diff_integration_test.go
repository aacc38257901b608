package diff_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/diff"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

const deploymentsTypeConfig = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: deployments.apps}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  targetType: {group: apps, kind: Deployment, pluralName: deployments, scope: Namespaced, version: v1}
`

const federatedDeployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  placement: {clusters: [{name: member-1}]}
  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 3
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

// cpv places web on member-1 with 2 replicas; the control plane is at
// versions 1 and 1.
const cpv = `
apiVersion: types.kubefed.io/v1beta1
kind: ClusterPropagatedVersion
metadata: {name: deployment-web, namespace: shop}
spec:
  template: web
  templateKind: FederatedDeployment
  templateAPIVersion: types.kubefed.io/v1beta1
  clusters: [{name: member-1, replicas: 2}]
`

// memberCopy is the copy the controller would write to member-1.
const memberCopy = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
  labels: {app: web, kubefed.io/managed: "true"}
  annotations: {fedwarden.io/template-version: "1", fedwarden.io/override-version: "1"}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

// TestDiff compares a FederatedDeployment of a real host with its copy in a
// real member: missing, in sync, edited out of band, edited in an ignored
// path; and fails on what it cannot compare.
func TestDiff(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(1),
		localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	member := fed.Member("member-1")
	host, memberClient := clitest.Client(t, fed.Host.Kubeconfig), clitest.Client(t, member.Kubeconfig)
	hostFlags := []string{"--host-kubeconfig", fed.Host.Kubeconfig}
	if _, stderr, code := clitest.Execute(join.NewCommand, append([]string{"member-1", "--cluster-kubeconfig", member.Kubeconfig, "--wait=false"}, hostFlags...)...); code != 0 {
		t.Fatalf("join: exit code %d:\n%s", code, stderr)
	}
	for _, c := range []client.Client{host, memberClient} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
			t.Fatal(err)
		}
	}
	create(ctx, t, host, deploymentsTypeConfig)
	create(ctx, t, host, federatedDeployment)
	placed := create(ctx, t, host, cpv)
	placed.Object["status"] = map[string]any{"templateVersion": "1", "overrideVersion": "1"}
	if err := host.Status().Update(ctx, placed); err != nil {
		t.Fatal(err)
	}
	token := memberToken(ctx, t, host)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		stdout, stderr, code := clitest.Execute(diff.NewCommand, append(args, hostFlags...)...)
		if strings.Contains(stdout+stderr, token) {
			t.Fatalf("diff %v printed the member's token", args)
		}
		return stdout, stderr, code
	}

	stdout, stderr, code := run("fdeploy/web", "-n", "shop")
	if code != 1 || !strings.Contains(stderr, "member-1: differs: missing") ||
		!strings.Contains(stdout, "--- desired member-1/shop/web\n+++ live member-1/shop/web\n") || !strings.Contains(stdout, "\n-  replicas: 2\n") {
		t.Errorf("diff with no member copy: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	apply(ctx, t, memberClient, "fedwarden", memberCopy)
	stdout, stderr, code = run("federateddeployment/web", "-n", "shop")
	if code != 0 || stdout != "" || !strings.Contains(stderr, "Comparing FederatedDeployment shop/web in 1 cluster: member-1") ||
		!strings.Contains(stderr, "member-1: in sync") {
		t.Errorf("diff of a copy in sync: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	apply(ctx, t, memberClient, "kubectl-edit", strings.Replace(strings.Replace(memberCopy, "nginx:1.25", "nginx:1.26", 1),
		"annotations: {fedwarden.io/template-version: \"1\", fedwarden.io/override-version: \"1\"}", "", 1))
	stdout, stderr, code = run("deployment/web", "-n", "shop", "--cluster", "member-1")
	if code != 1 || !strings.Contains(stdout, "-      - image: nginx:1.25\n+      - image: nginx:1.26\n") ||
		!strings.Contains(stderr, "member-1: differs: changed /spec/template/spec/containers/0/image (by kubectl-edit)") {
		t.Errorf("diff of an edited copy: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	ignore := []byte(`{"spec": {"driftPolicy": {"ignorePaths": ["/spec/template/spec/containers/0/image"]}}}`)
	if err := host.Patch(ctx, object(t, federatedDeployment), client.RawPatch(types.MergePatchType, ignore)); err != nil {
		t.Fatal(err)
	}
	if stdout, stderr, code = run("fdeploy/web", "-n", "shop"); code != 0 || stdout != "" {
		t.Errorf("diff of a copy edited in an ignored path: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"fdeploy/web", "-n", "shop", "--cluster", "member-2"}, want: "--cluster member-2: FederatedDeployment shop/web is not placed there; it is placed on member-1"},
		{args: []string{"fdeploy/nope", "-n", "shop"}, want: "FederatedDeployment shop/nope not found in the host"},
		{args: []string{"configmap/web", "-n", "shop"}, want: "ConfigMap is not federated"},
	} {
		if _, stderr, code := run(tt.args...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("diff %v: exit code %d, want 2; stderr %q", tt.args, code, stderr)
		}
	}

	if err := member.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := run("fdeploy/web", "-n", "shop", "--timeout", "5s"); code != 2 || !strings.Contains(stderr, "member-1: not compared: reading Deployment shop/web in cluster member-1") {
		t.Errorf("diff with the member down: exit code %d, want 2; stderr %q", code, stderr)
	}
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func create(ctx context.Context, t *testing.T, c client.Client, doc string) *unstructured.Unstructured {
	t.Helper()
	u := object(t, doc)
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// apply applies doc server-side as manager.
func apply(ctx context.Context, t *testing.T, c client.Client, manager, doc string) {
	t.Helper()
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(object(t, doc)), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("applying as %s: %v", manager, err)
	}
}

// memberToken is the token the host keeps for member-1.
func memberToken(ctx context.Context, t *testing.T, host client.Client) string {
	t.Helper()
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: corev1beta1.DefaultFederationNamespace, Name: "fedwarden-member-1-credentials"}
	if err := host.Get(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	token := string(secret.Data[corev1beta1.SecretTokenKey])
	if token == "" {
		t.Fatal("the host keeps no token for member-1")
	}
	return token
}
