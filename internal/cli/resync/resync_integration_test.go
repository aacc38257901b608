package resync_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/resync"
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
  placement: {clusters: [{name: cluster-a}]}
  template:
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

// TestResync annotates a FederatedDeployment of a real host, naming its kind
// in the ways users do, and fails on what does not exist.
func TestResync(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	host := clitest.Client(t, fed.Host.Kubeconfig)
	flags := []string{"--host-kubeconfig", fed.Host.Kubeconfig}
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	create(ctx, t, host, deploymentsTypeConfig)
	create(ctx, t, host, federatedDeployment)

	var last string
	for _, kind := range []string{"FederatedDeployment", "federateddeployments", "fdeploy", "federateddeployments.types.kubefed.io", "deployment"} {
		before := time.Now().UTC()
		stdout, stderr, code := clitest.Execute(resync.NewCommand, append([]string{kind + "/web", "-n", "shop"}, flags...)...)
		if code != 0 || stdout != "federateddeployment.types.kubefed.io/web: resync requested\n" {
			t.Fatalf("resync %s/web: exit code %d, stdout %q, stderr %q", kind, code, stdout, stderr)
		}
		value := resyncAnnotation(ctx, t, host)
		at, err := time.Parse(time.RFC3339Nano, value)
		if err != nil || !strings.HasSuffix(value, "Z") || at.Before(before.Truncate(time.Second)) || value == last {
			t.Errorf("resync %s/web: annotation %q (%v), want a new UTC time after %s", kind, value, err, before.Format(time.RFC3339Nano))
		}
		last = value
	}

	_, stderr, code := clitest.Execute(resync.NewCommand, append([]string{"fdeploy/nope", "-n", "shop"}, flags...)...)
	if code != 1 || !strings.Contains(stderr, "FederatedDeployment shop/nope not found in the host") {
		t.Errorf("resync of a missing resource: exit code %d, want 1; stderr %q", code, stderr)
	}
	_, stderr, code = clitest.Execute(resync.NewCommand, append([]string{"configmap/web", "-n", "shop"}, flags...)...)
	if code != 2 || !strings.Contains(stderr, `unknown federated kind "configmap": ConfigMap is not federated`) {
		t.Errorf("resync of a kind that is not federated: exit code %d, want 2; stderr %q", code, stderr)
	}
}

func resyncAnnotation(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("types.kubefed.io/v1beta1")
	u.SetKind("FederatedDeployment")
	if err := c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, u); err != nil {
		t.Fatal(err)
	}
	return u.GetAnnotations()[typesv1beta1.AnnotationResync]
}

func create(ctx context.Context, t *testing.T, c client.Client, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
}
