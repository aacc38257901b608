package memberdiff

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/internal/drift"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// secretDoc is a Secret with data and annotations as YAML.
func secretDoc(t *testing.T, doc string) map[string]any {
	t.Helper()
	obj := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestRedactSecret(t *testing.T) {
	t.Parallel()
	const (
		password = "correct-horse"   // 13 bytes
		other    = "correct-horsf"   // 13 bytes, another value
		apiKey   = "AKIA-0123456789" // 15 bytes
	)
	tests := []struct {
		name              string
		desired, live     string
		wantDesired       map[string]string // path -> marker or kept value
		wantLive          map[string]string
		secrets           []string // never in the output, raw or base64
		desiredNil, noLiv bool
	}{
		{
			name:        "same value: same marker on both sides",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(password) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>"},
			secrets:     []string{password},
		},
		{
			name:        "another value of the same length: the live side differs",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(other) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password, other},
		},
		{
			name:        "stringData compared with the data the server keeps",
			desired:     "stringData: {password: " + password + ", key: " + apiKey + "}",
			live:        "data: {password: " + b64(password) + ", key: " + b64(other) + "}",
			wantDesired: map[string]string{"stringData/password": "<redacted: 13 bytes>", "stringData/key": "<redacted: 15 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>", "data/key": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password, apiKey, other},
		},
		{
			name:        "no live copy",
			desired:     "data: {password: " + b64(password) + "}\nstringData: {key: " + apiKey + "}",
			noLiv:       true,
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>", "stringData/key": "<redacted: 15 bytes>"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "a key only on one side",
			desired:     "data: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(password) + ", extra: " + b64(apiKey) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 13 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes>", "data/extra": "<redacted: 15 bytes>"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "data that is not base64",
			desired:     "data: {password: '" + password + "!'}",
			live:        "data: {password: " + b64(password) + "}",
			wantDesired: map[string]string{"data/password": "<redacted: 14 bytes>"},
			wantLive:    map[string]string{"data/password": "<redacted: 13 bytes, differs>"},
			secrets:     []string{password},
		},
		{
			name: "last-applied configuration, on both sides",
			desired: `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"` + b64(password) + `"}}', team: shop}}
data: {password: ` + b64(password) + "}",
			live: `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"data":{"password":"` + b64(other) + `"}}', team: shop}}
data: {password: ` + b64(password) + "}",
			wantDesired: map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 44 bytes>", "annotations/team": "shop"},
			wantLive:    map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 44 bytes, differs>", "annotations/team": "shop"},
			secrets:     []string{password, other},
		},
		{
			name:        "last-applied configuration of an empty Secret",
			desired:     `metadata: {annotations: {"kubectl.kubernetes.io/last-applied-configuration": '{"kind":"Secret"}'}}`,
			wantDesired: map[string]string{"annotations/kubectl.kubernetes.io/last-applied-configuration": "<redacted: 17 bytes>"},
			noLiv:       true,
		},
		{
			name:        "another annotation holding a value, raw or base64",
			desired:     "metadata: {annotations: {note: 'was " + password + "', copy: 'x" + b64(apiKey) + "', team: shop}}\ndata: {password: " + b64(password) + ", key: " + b64(apiKey) + "}",
			noLiv:       true,
			wantDesired: map[string]string{"annotations/note": "<redacted: 17 bytes>", "annotations/copy": "<redacted: 21 bytes>", "annotations/team": "shop"},
			secrets:     []string{password, apiKey},
		},
		{
			name:        "a live value found in a desired annotation",
			desired:     "metadata: {annotations: {note: 'now " + other + "'}}\ndata: {password: " + b64(password) + "}",
			live:        "data: {password: " + b64(other) + "}",
			wantDesired: map[string]string{"annotations/note": "<redacted: 17 bytes>"},
			secrets:     []string{other},
		},
		{
			name:        "values under 4 bytes are not looked for in annotations",
			desired:     "metadata: {annotations: {team: shop-abc}}\ndata: {code: " + b64("abc") + "}",
			noLiv:       true,
			wantDesired: map[string]string{"annotations/team": "shop-abc", "data/code": "<redacted: 3 bytes>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			desired := secretDoc(t, tt.desired)
			var live map[string]any
			if !tt.noLiv {
				live = secretDoc(t, tt.live)
			}
			redactSecret(desired, live)
			for side, want := range map[string]map[string]string{"desired": tt.wantDesired, "live": tt.wantLive} {
				obj := desired
				if side == "live" {
					obj = live
				}
				for path, w := range want {
					if got := at(obj, path); got != w {
						t.Errorf("%s %s = %q, want %q", side, path, got, w)
					}
				}
			}
			out, err := yaml.Marshal([]any{desired, live})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.secrets {
				if strings.Contains(string(out), s) || strings.Contains(string(out), b64(s)) {
					t.Errorf("the redacted copies hold %q:\n%s", s, out)
				}
			}
		})
	}
}

// at returns the string at path of obj: data/KEY, stringData/KEY or
// annotations/KEY; "<none>" when there is none.
func at(obj map[string]any, path string) string {
	field, key, _ := strings.Cut(path, "/")
	m, _ := obj[field].(map[string]any)
	if field == "annotations" {
		meta, _ := obj["metadata"].(map[string]any)
		m, _ = meta["annotations"].(map[string]any)
	}
	s, ok := m[key].(string)
	if !ok {
		return "<none>"
	}
	return s
}

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
