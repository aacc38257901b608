package clustercache

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "test-ca"},
		NotBefore:             time.Now(),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestConnectionFrom(t *testing.T) {
	ca := testCA(t)
	otherCA := testCA(t)
	const token = "eyJhbGciOiJSUzI1NiJ9.secret-part.sig"
	fc := func(caBundle []byte) *corev1beta1.FederatedCluster {
		return &corev1beta1.FederatedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "member-1"},
			Spec: corev1beta1.FederatedClusterSpec{
				APIEndpoint: "https://10.0.0.1:6443",
				CABundle:    caBundle,
				SecretRef:   &corev1beta1.LocalSecretReference{Name: "creds"},
			},
		}
	}
	secret := func(data map[string]string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-federation-system", Name: "creds"}, Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	tests := []struct {
		name       string
		fc         *corev1beta1.FederatedCluster
		secret     *corev1.Secret
		wantReason string // empty: valid
		wantCA     []byte
	}{
		{name: "spec CA wins", fc: fc(ca), secret: secret(map[string]string{"token": token, "ca.crt": string(otherCA)}), wantCA: ca},
		{name: "Secret CA when spec has none", fc: fc(nil), secret: secret(map[string]string{"token": token, "ca.crt": string(otherCA)}), wantCA: otherCA},
		{name: "no CA at all means system roots", fc: fc(nil), secret: secret(map[string]string{"token": token})},
		{name: "bundle of two CAs", fc: fc(append(append([]byte{}, ca...), otherCA...)), secret: secret(map[string]string{"token": token}), wantCA: append(append([]byte{}, ca...), otherCA...)},
		{name: "no token key", fc: fc(ca), secret: secret(map[string]string{"ca.crt": string(ca)}), wantReason: corev1beta1.ReasonSecretMalformed},
		{name: "empty token", fc: fc(ca), secret: secret(map[string]string{"token": ""}), wantReason: corev1beta1.ReasonSecretMalformed},
		{name: "token with a newline", fc: fc(ca), secret: secret(map[string]string{"token": token + "\n"}), wantReason: corev1beta1.ReasonSecretMalformed},
		{name: "CA bundle not PEM", fc: fc([]byte("not a certificate")), secret: secret(map[string]string{"token": token}), wantReason: corev1beta1.ReasonCABundleMalformed},
		{name: "CA bundle holds a key", fc: fc(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})), secret: secret(map[string]string{"token": token}), wantReason: corev1beta1.ReasonCABundleMalformed},
		{name: "CA bundle with a broken certificate", fc: fc(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}})), secret: secret(map[string]string{"token": token}), wantReason: corev1beta1.ReasonCABundleMalformed},
		{name: "Secret CA malformed", fc: fc(nil), secret: secret(map[string]string{"token": token, "ca.crt": "junk"}), wantReason: corev1beta1.ReasonCABundleMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, err := connectionFrom(tt.fc, tt.secret)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if conn.Token != token || conn.Endpoint != tt.fc.Spec.APIEndpoint || string(conn.CABundle) != string(tt.wantCA) {
					t.Errorf("connection = endpoint %q, CA %d bytes; want endpoint %q, CA %d bytes", conn.Endpoint, len(conn.CABundle), tt.fc.Spec.APIEndpoint, len(tt.wantCA))
				}
				return
			}
			var malformed *MalformedError
			if !errors.As(err, &malformed) {
				t.Fatalf("error = %v, want a *MalformedError", err)
			}
			if malformed.Reason != tt.wantReason {
				t.Errorf("reason = %s, want %s (message %q)", malformed.Reason, tt.wantReason, malformed.Message)
			}
			if strings.Contains(malformed.Message, "secret-part") {
				t.Errorf("message leaks the token: %q", malformed.Message)
			}
		})
	}
}

func TestCacheRebuildsOnlyOnChange(t *testing.T) {
	c := New(Options{QPS: 5, Burst: 10})
	if _, err := c.Get("member-1"); !errors.Is(err, ErrClusterNotConnected) {
		t.Fatalf("Get before Set: err = %v, want ErrClusterNotConnected", err)
	}
	conn := Connection{Endpoint: "https://10.0.0.1:6443", Token: "t1"}
	first, rebuilt, err := c.Set("member-1", conn)
	if err != nil || !rebuilt {
		t.Fatalf("first Set: rebuilt=%v err=%v", rebuilt, err)
	}
	same, rebuilt, _ := c.Set("member-1", conn)
	if rebuilt || same != first {
		t.Fatal("Set with the same connection rebuilt the clients")
	}
	for _, changed := range []Connection{
		{Endpoint: "https://10.0.0.2:6443", Token: "t1"},
		{Endpoint: "https://10.0.0.2:6443", Token: "t2"},
		{Endpoint: "https://10.0.0.2:6443", Token: "t2", CABundle: testCA(t)},
	} {
		prev, _ := c.Get("member-1")
		next, rebuilt, err := c.Set("member-1", changed)
		if err != nil || !rebuilt || next == prev {
			t.Fatalf("Set(%s) did not rebuild: rebuilt=%v err=%v", changed.Endpoint, rebuilt, err)
		}
		if prev.Context().Err() == nil {
			t.Error("the replaced member's context is still live")
		}
		if next.Config.Host != changed.Endpoint || next.Config.BearerToken != changed.Token {
			t.Error("rebuilt config does not carry the new connection")
		}
	}
	m, _ := c.Get("member-1")
	c.Remove("member-1")
	if m.Context().Err() == nil {
		t.Error("Remove left the member's context live")
	}
	if _, err := c.Get("member-1"); !errors.Is(err, ErrClusterNotConnected) {
		t.Errorf("Get after Remove: err = %v", err)
	}
	if names := c.Names(); len(names) != 0 {
		t.Errorf("Names after Remove = %v", names)
	}
}
