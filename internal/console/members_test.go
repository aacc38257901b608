package console_test

import (
	"context"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/clitest"
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

// memberCopy is the copy the controller would write to member-1 of the
// FederatedDeployment shop/web.
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

var joinOnce sync.Once

// joinMember joins member-1 to the host, once, as `fedwarden join` does:
// the host then keeps its credentials.
func joinMember(t *testing.T) {
	t.Helper()
	joinOnce.Do(func() {
		args := []string{"member-1", "--cluster-kubeconfig", fed.Member("member-1").Kubeconfig, "--host-kubeconfig", fed.Host.Kubeconfig, "--wait=false"}
		if _, stderr, code := clitest.Execute(join.NewCommand, args...); code != 0 {
			t.Fatalf("join: exit code %d:\n%s", code, stderr)
		}
	})
}

// applyAs applies doc server-side as manager.
func applyAs(ctx context.Context, t *testing.T, c client.Client, manager, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("applying as %s: %v", manager, err)
	}
}
