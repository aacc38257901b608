package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/config/admission"
)

// TestAFederatedSecretIsNotRolledOutInWaves: `kubectl apply` of a
// FederatedSecret with spec.rollout.strategy Waves is refused by the
// admission policy, saying why and what to do instead (its revisions would
// keep the Secret's data in ControllerRevisions), on create and when an
// update sets Waves; strategy All is admitted. The controller refuses to
// sync one stored before the policy existed (TestWavesOfSecretsAreRefused).
func TestAFederatedSecretIsNotRolledOutInWaves(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableSecrets(t)
	c := hostClient(t)
	ns := testNamespace(t, c)
	manifest := func(name, strategy string) string {
		path := filepath.Join(t.TempDir(), name+".yaml")
		doc := fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: %s, namespace: %s}
spec:
  template:
    stringData: {password: not-a-real-one}
  placement: {clusters: [{name: member-1}]}
  rollout:
    strategy: %s
    waves: [{clusters: [member-1]}]
`, name, ns, strategy)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	refusal := "cannot be rolled out in waves (spec.rollout.strategy Waves): its earlier revisions would keep the Secret's data in ControllerRevisions; use strategy All"
	out := kubectlRefused(t, "apply", "--server-side", "-f", manifest("waves", "Waves"))
	if !strings.Contains(out, admission.FederatedSecretRolloutPolicy) || !strings.Contains(out, refusal) {
		t.Errorf("kubectl apply of a FederatedSecret in waves printed %q; want the policy %s saying %q", out, admission.FederatedSecretRolloutPolicy, refusal)
	}
	kubectl(t, fed.Host.Kubeconfig, "apply", "--server-side", "-f", manifest("all", "All"))
	t.Cleanup(func() {
		secret := &unstructured.Unstructured{}
		secret.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedSecret"))
		secret.SetNamespace(ns)
		secret.SetName("all")
		_ = c.Delete(context.Background(), secret)
	})
	out = kubectlRefused(t, "-n", ns, "patch", "federatedsecret", "all", "--type=merge", "-p", `{"spec":{"rollout":{"strategy":"Waves"}}}`)
	if !strings.Contains(out, refusal) {
		t.Errorf("setting Waves on a FederatedSecret printed %q; want %q", out, refusal)
	}
}
