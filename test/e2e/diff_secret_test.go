package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// enableSecrets enables Secrets in the shared test bed (once for all tests)
// and waits until their propagation controller runs.
func enableSecrets(t *testing.T) {
	t.Helper()
	enableTypes(t, "secrets")
}

// randomValue returns a value no text holds by chance: 24 hexadecimal
// characters.
func randomValue(t *testing.T) string {
	t.Helper()
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Invariant 7, no secret leaves: `fedwarden diff` of a FederatedSecret
// whose copy was edited in a member tells which key differs, and shows no
// value of the template, of the member's copy, or of the last-applied
// configuration that holds them; --show-secrets shows them.
func TestNoSecretLeavesThroughDiff(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableSecrets(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	password, apiKey, edited := randomValue(t), randomValue(t), randomValue(t)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	// As `kubectl apply` leaves it on a Secret it applied: the data, again.
	lastApplied := fmt.Sprintf(`{"apiVersion":"v1","data":{"api-key":"%s","password":"%s"},"kind":"Secret","metadata":{"name":"db","namespace":"%s"},"type":"Opaque"}`,
		b64(apiKey), b64(password), ns)
	createObject(t, host, decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: db, namespace: %s}
spec:
  template:
    metadata:
      annotations: {kubectl.kubernetes.io/last-applied-configuration: '%s'}
    type: Opaque
    data: {password: %s, api-key: %s}
  placement: {clusters: [{name: %s}, {name: %s}]}
  driftPolicy: {remediation: Alert}
`, ns, lastApplied, b64(password), b64(apiKey), m1, m2)))
	waitForCPV(t, host, ns, "secret-db", "1", "1", m1, m2)
	secrets := map[string]string{"the password": password, "the API key": apiKey, "the edited password": edited, "the last-applied configuration": lastApplied}
	hostArgs := []string{"-n", ns, "--host-kubeconfig", fed.Host.Kubeconfig}
	diff := func(extra ...string) result {
		t.Helper()
		r := runFedwarden(t, append(append([]string{"diff", "federatedsecret/db"}, hostArgs...), extra...)...)
		if len(extra) == 0 {
			for what, v := range secrets {
				if strings.Contains(r.stdout+r.stderr, v) || strings.Contains(r.stdout+r.stderr, b64(v)) {
					t.Errorf("fedwarden diff shows %s", what)
				}
			}
		}
		return r
	}
	if r := diff(); r.code != 0 || r.stdout != "" {
		t.Errorf("fedwarden diff of copies in sync: want exit 0 and nothing on stdout\n%s", r)
	}

	// Someone changes the password in m1, to a value of the same length.
	member := memberClient(t, 0)
	poll.Eventually(t, 30*time.Second, "editing the member's Secret", func(ctx context.Context) (bool, string) {
		s := &corev1.Secret{}
		if err := member.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, s); err != nil {
			return false, err.Error()
		}
		s.Data["password"] = []byte(edited)
		if err := member.Update(ctx, s, client.FieldOwner("kubectl-edit")); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	waitForEntry(t, host, ns, "secret-db", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.ModifiedOutOfBand })
	r := diff()
	for _, want := range []string{
		"-  password: '<redacted: 24 bytes>'\n+  password: '<redacted: 24 bytes, differs>'\n",
		"   api-key: '<redacted: 24 bytes>'\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fedwarden diff does not show %q", want)
		}
	}
	if r.code != 1 || !strings.Contains(r.stderr, m1+": differs: changed /data/password (by kubectl-edit)") || !strings.Contains(r.stderr, m2+": in sync") {
		t.Errorf("fedwarden diff of an edited Secret: want exit 1, the key and who changed it\n%s", r)
	}

	// --show-secrets shows the values, as they are in the Secret: base64.
	r = diff("--show-secrets", "--cluster", m1)
	if r.code != 1 || !strings.Contains(r.stdout, "-  password: "+b64(password)+"\n+  password: "+b64(edited)+"\n") {
		t.Errorf("fedwarden diff --show-secrets: want exit 1 and both passwords\n%s", r)
	}
}
