package leakscan

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const token = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.c2lnbmF0dXJl"

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// selfSigned returns a PEM certificate and a PEM key.
func selfSigned(t *testing.T) (cert, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// TestScan plants secret values in logs and API strings, in the forms they
// leak in, and checks that each is found, named by origin, and that what
// is not a secret is not reported.
func TestScan(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	dir := t.TempDir()
	s := New(filepath.Join(dir, "kept"))
	s.AddSecret("the token of test", []byte(token))
	s.AddSecret("the key of test", key)
	s.AddSecret("the password of test", []byte("hunter2")) // 7 bytes: left out
	s.AddSecret("the CA of test", cert)                    // public
	s.AddSecret("the same token again", []byte(token))     // the first origin stays
	s.AddSecret("the canary", []byte("planted-canary-value"))
	s.Canary([]byte("planted-canary-value"))

	logs := map[string]string{
		"raw":    `{"msg":"Probing","token":"` + token + `"}`,
		"base64": `{"msg":"Read Secret","data":{"token":"` + b64(token) + `"}}`,
		"json":   `{"msg":"Loaded","key":` + quote(string(key)) + `}`,
		"clean":  `{"msg":"hunter2 is short; ` + strings.ReplaceAll(string(cert), "\n", `\n`) + `"}`,
	}
	for name, content := range logs {
		path := filepath.Join(dir, name+".log")
		if err := os.WriteFile(path, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.AddLog(name, path)
	}
	// A kept log survives its directory.
	if err := s.Keep("raw"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "raw.log")); err != nil {
		t.Fatal(err)
	}
	s.addText("the status of FederatedCluster a in cluster host", "probe failed: Bearer "+token[:20]+"…") // a part: no match
	s.addText("the Event ns/e in cluster host", "sent "+token+" to the member")
	s.addText("the Event ns/c in cluster host", "planted planted-canary-value")

	leaks, sum, err := s.Scan()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range leaks {
		got = append(got, l.String())
		if l.Canary != (l.Secret == "the canary") {
			t.Errorf("%s: canary %v", l, l.Canary)
		}
	}
	want := []string{
		"the Event ns/c in cluster host holds the canary",
		"the Event ns/e in cluster host holds the token of test",
		"the log base64 holds the token of test, base64-encoded",
		"the log json holds the key of test, JSON-escaped",
		"the log raw holds the token of test",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("leaks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if strings.Contains(l, token) || strings.Contains(l, "PRIVATE KEY") {
			t.Errorf("the report shows the secret: %s", l)
		}
	}
	if sum.Secrets != 3 || sum.Short != 1 || sum.Logs != 4 || sum.Texts != 3 || sum.Canaries != 1 ||
		strings.Join(sum.Origins, ", ") != "the canary, the key of test, the token of test" {
		t.Errorf("summary %+v, want 3 secrets (one a canary), 1 short, 4 logs, 3 texts", sum)
	}

	s.AddLog("gone", filepath.Join(dir, "gone.log"))
	if _, _, err := s.Scan(); err == nil || !strings.Contains(err.Error(), "the log gone could not be scanned") {
		t.Errorf("a log that is gone: %v, want an error naming it", err)
	}
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

func TestIsCertificate(t *testing.T) {
	t.Parallel()
	cert, key := selfSigned(t)
	for _, tt := range []struct {
		data []byte
		want bool
	}{
		{cert, true},
		{append(append([]byte{}, cert...), cert...), true},
		{key, false},
		{append(append([]byte{}, cert...), key...), false},
		{[]byte(token), false},
		{append(append([]byte{}, cert...), "trailing secret"...), false},
	} {
		if got := isCertificate(tt.data); got != tt.want {
			t.Errorf("isCertificate(%.40q…) = %v, want %v", tt.data, got, tt.want)
		}
	}
}

// TestHarvest feeds the watchers' handlers objects as the API serves them.
func TestHarvest(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir())
	w := &watcher{scanner: s, cluster: "member-1"}
	w.secret(&unstructured.Unstructured{Object: map[string]any{
		"kind": "Secret", "type": "kubernetes.io/service-account-token",
		"metadata": map[string]any{"namespace": "kube-federation-system", "name": "fedwarden-member-1-token"},
		"data":     map[string]any{"token": b64(token), "namespace": b64("kube-federation-system"), "ca.crt": b64("not a pem, but short")},
	}})
	w.federatedSecret(&unstructured.Unstructured{Object: map[string]any{
		"kind":     "FederatedSecret",
		"metadata": map[string]any{"namespace": "shop", "name": "db"},
		"spec": map[string]any{
			"template": map[string]any{"data": map[string]any{"password": b64("correct-horse")}, "stringData": map[string]any{"user": "administrator"}},
			"overrides": []any{map[string]any{"clusterName": "member-1", "clusterOverrides": []any{
				map[string]any{"path": "/data", "value": map[string]any{"password": b64("member-1-horse")}},
				map[string]any{"path": "/data/extra", "value": b64("an-extra-value")},
				map[string]any{"path": "/metadata/labels", "value": map[string]any{"tier": "a-label-value"}},
			}}},
		},
		"status": map[string]any{"conditions": []any{map[string]any{"message": "propagated to member-1"}}},
	}})
	want := map[string]string{
		token:                    "the value of Secret kube-federation-system/fedwarden-member-1-token key token in cluster member-1",
		"not a pem, but short":   "the value of Secret kube-federation-system/fedwarden-member-1-token key ca.crt in cluster member-1",
		"correct-horse":          "the value of spec.template.data key password of FederatedSecret shop/db in cluster member-1",
		"administrator":          "the value of spec.template.stringData key user of FederatedSecret shop/db in cluster member-1",
		"member-1-horse":         "the value of the override of /data for cluster member-1, key password of FederatedSecret shop/db in cluster member-1",
		"an-extra-value":         "the value of the override of /data/extra for cluster member-1, key /data/extra of FederatedSecret shop/db in cluster member-1",
		"kube-federation-system": "",
		"a-label-value":          "",
	}
	for value, origin := range want {
		if got := s.secrets[value]; got != origin {
			t.Errorf("the origin of %q is %q, want %q", value, got, origin)
		}
	}
	if place := s.texts["propagated to member-1"]; place != "the status of FederatedSecret shop/db in cluster member-1" {
		t.Errorf("the status string was recorded at %q", place)
	}
}

func TestSees(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir())
	if s.Sees(token) {
		t.Error("sees a value it does not know")
	}
	s.AddSecret("the token", []byte(token))
	if s.Sees(token) {
		t.Error("sees a value it has not read anywhere")
	}
	s.addText("the Event ns/e in cluster host", "x "+token)
	if !s.Sees(token) {
		t.Error("does not see a value it knows and has read")
	}
}
