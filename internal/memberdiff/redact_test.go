package memberdiff

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fedwarden/fedwarden/internal/drift"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// secretKind is Secret, as a FederatedSecret's type config has it.
func secretKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
}

func TestIsSecret(t *testing.T) {
	t.Parallel()
	if !IsSecret(secretKind()) || IsSecret(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}) ||
		IsSecret(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Secret"}) {
		t.Error("isSecret must hold for the core Secret only")
	}
}

// TestCompareRedactsSecrets compares a Secret whose value was changed in
// the member: the diff names the key that differs, and holds no value, in
// any form; unless redact is off, as with --show-secrets.
func TestCompareRedactsSecrets(t *testing.T) {
	t.Parallel()
	const (
		desiredYAML = `
apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: shop
  labels: {kubefed.io/managed: "true"}
  annotations: {kubectl.kubernetes.io/last-applied-configuration: '{"data":{"password":"c2VjcmV0LXBhc3N3b3JkLTE="}}'}
type: Opaque
data: {password: c2VjcmV0LXBhc3N3b3JkLTE=, user: YWRtaW5pc3RyYXRvcg==}
`
		password, edited, user = "secret-password-1", "secret-password-2", "administrator"
	)
	live := object(t, strings.ReplaceAll(desiredYAML, "c2VjcmV0LXBhc3N3b3JkLTE=", b64(edited)))
	live.SetManagedFields(append(live.GetManagedFields(), owned("kubectl-edit", `{"f:data":{"f:password":{}}}`)))
	tests := []struct {
		redact   bool
		want     []string
		secrets  []string
		revealed []string
	}{
		{
			redact: true,
			want: []string{
				"-    kubectl.kubernetes.io/last-applied-configuration: '<redacted: 48 bytes>'\n+    kubectl.kubernetes.io/last-applied-configuration: '<redacted: 48 bytes, differs>'\n",
				"-  password: '<redacted: 17 bytes>'\n+  password: '<redacted: 17 bytes, differs>'\n",
				"   user: '<redacted: 13 bytes>'\n",
			},
			secrets: []string{password, edited, user},
		},
		{redact: false, revealed: []string{b64(password), b64(edited), b64(user)}},
	}
	for _, tt := range tests {
		v, err := Compare(Input{Location: "cluster-a/shop/db", Desired: object(t, desiredYAML), Live: live, Policy: drift.Policy{}, Redact: tt.redact})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(v.Reasons, "; "); got != "changed /data/password (by kubectl-edit)" {
			t.Errorf("redact=%v: reasons %q", tt.redact, got)
		}
		for _, w := range tt.want {
			if !strings.Contains(v.Text, w) {
				t.Errorf("redact=%v: diff does not hold %q:\n%s", tt.redact, w, v.Text)
			}
		}
		for _, s := range tt.secrets {
			if strings.Contains(v.Text, s) || strings.Contains(v.Text, b64(s)) {
				t.Errorf("redact=%v: diff shows the value %q:\n%s", tt.redact, s, v.Text)
			}
		}
		for _, s := range tt.revealed {
			if !strings.Contains(v.Text, s) {
				t.Errorf("redact=%v: diff does not show %q:\n%s", tt.redact, s, v.Text)
			}
		}
	}
}
