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
			// Bound to the cluster, its endpoint and the CA it is verified
			// with, as join binds it: only the problem under test remains.
			bind(tt.secret, tt.fc.Name, tt.fc.Spec.APIEndpoint, tt.wantCA)
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

// bind writes on secret the annotations that bind it to cluster, endpoint
// and ca, and returns it.
func bind(secret *corev1.Secret, cluster, endpoint string, ca []byte) *corev1.Secret {
	secret.Annotations = map[string]string{
		corev1beta1.AnnotationCredentialsCluster:  cluster,
		corev1beta1.AnnotationCredentialsEndpoint: endpoint,
		corev1beta1.AnnotationCredentialsCA:       CADigest(ca),
	}
	return secret
}

// A token is handed out only for the cluster, endpoint and CA bundle its
// Secret is bound to: a FederatedCluster edited to name another cluster's
// Secret, another endpoint or another CA gets CredentialsNotBound and no
// Connection, so no client can send the token.
func TestConnectionFromRefusesUnboundCredentials(t *testing.T) {
	ca, rogueCA := testCA(t), testCA(t)
	const (
		token    = "eyJhbGciOiJSUzI1NiJ9.secret-part.sig"
		endpoint = "https://10.0.0.1:6443"
		rogue    = "https://127.0.0.1:4443"
	)
	fc := func(name, endpoint string, ca []byte) *corev1beta1.FederatedCluster {
		return &corev1beta1.FederatedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1beta1.FederatedClusterSpec{
				APIEndpoint: endpoint, CABundle: ca,
				SecretRef: &corev1beta1.LocalSecretReference{Name: "fedwarden-cluster2-credentials"},
			},
		}
	}
	secret := func(caKey []byte) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "kube-federation-system", Name: "fedwarden-cluster2-credentials"},
			Data:       map[string][]byte{corev1beta1.SecretTokenKey: []byte(token)},
		}
		if caKey != nil {
			s.Data[corev1beta1.SecretCAKey] = caKey
		}
		return s
	}
	without := func(s *corev1.Secret, key string) *corev1.Secret {
		delete(s.Annotations, key)
		return s
	}
	tests := []struct {
		name      string
		fc        *corev1beta1.FederatedCluster
		secret    *corev1.Secret
		inMessage []string // empty: the Secret is bound to fc
	}{
		{name: "bound", fc: fc("cluster2", endpoint, ca), secret: bind(secret(nil), "cluster2", endpoint, ca)},
		{name: "bound, CA from the Secret", fc: fc("cluster2", endpoint, nil), secret: bind(secret(ca), "cluster2", endpoint, ca)},
		{name: "bound to the system roots", fc: fc("cluster2", endpoint, nil), secret: bind(secret(nil), "cluster2", endpoint, nil)},
		{name: "another cluster's Secret, sent to a rogue endpoint", fc: fc("cluster1", rogue, rogueCA), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"credentials of cluster cluster2, not of cluster1", "fedwarden join cluster1"}},
		{name: "another cluster's Secret, same endpoint", fc: fc("cluster1", endpoint, ca), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"credentials of cluster cluster2, not of cluster1"}},
		{name: "own Secret, endpoint changed", fc: fc("cluster2", rogue, ca), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"endpoint " + endpoint + ", not to spec.apiEndpoint " + rogue, "fedwarden join cluster2", corev1beta1.AnnotationCredentialsEndpoint}},
		{name: "own Secret, endpoint and CA changed", fc: fc("cluster2", rogue, rogueCA), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"not to spec.apiEndpoint " + rogue}},
		{name: "own Secret, CA changed", fc: fc("cluster2", endpoint, rogueCA), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"CA bundle " + CADigest(ca), "spec.caBundle (" + CADigest(rogueCA) + ")", corev1beta1.AnnotationCredentialsCA}},
		{name: "own Secret, CA removed: system roots", fc: fc("cluster2", endpoint, nil), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"the system roots (" + corev1beta1.CredentialsCASystemRoots + ")"}},
		{name: "spec CA overrides the bound Secret CA", fc: fc("cluster2", endpoint, rogueCA), secret: bind(secret(ca), "cluster2", endpoint, ca),
			inMessage: []string{"spec.caBundle"}},
		{name: "endpoint differs by a trailing slash", fc: fc("cluster2", endpoint+"/", ca), secret: bind(secret(nil), "cluster2", endpoint, ca),
			inMessage: []string{"not to spec.apiEndpoint"}},
		{name: "no binding: written by an older join", fc: fc("cluster2", endpoint, ca), secret: secret(nil),
			inMessage: []string{"is not bound to a cluster", "fedwarden join cluster2", corev1beta1.AnnotationCredentialsCluster}},
		{name: "binding without the CA", fc: fc("cluster2", endpoint, ca), secret: without(bind(secret(nil), "cluster2", endpoint, ca), corev1beta1.AnnotationCredentialsCA),
			inMessage: []string{"lacks the annotations " + corev1beta1.AnnotationCredentialsCA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn, err := connectionFrom(tt.fc, tt.secret)
			if len(tt.inMessage) == 0 {
				if err != nil || conn.Token != token {
					t.Fatalf("connectionFrom = token %t, err %v; want the token", conn.Token != "", err)
				}
				return
			}
			if conn.Token != "" {
				t.Error("the Connection holds the token")
			}
			var malformed *MalformedError
			if !errors.As(err, &malformed) || malformed.Reason != corev1beta1.ReasonCredentialsNotBound {
				t.Fatalf("error = %v, want a *MalformedError with reason %s", err, corev1beta1.ReasonCredentialsNotBound)
			}
			for _, want := range tt.inMessage {
				if !strings.Contains(malformed.Message, want) {
					t.Errorf("message %q does not say %q", malformed.Message, want)
				}
			}
			if strings.Contains(malformed.Message, "secret-part") {
				t.Errorf("message leaks the token: %q", malformed.Message)
			}
		})
	}
}

func TestCADigest(t *testing.T) {
	t.Parallel()
	ca := testCA(t)
	if got := CADigest(nil); got != corev1beta1.CredentialsCASystemRoots {
		t.Errorf("CADigest(nil) = %q, want %q", got, corev1beta1.CredentialsCASystemRoots)
	}
	got := CADigest(ca)
	if !strings.HasPrefix(got, "sha256:") || len(got) != len("sha256:")+64 || got != CADigest(append([]byte{}, ca...)) {
		t.Errorf("CADigest = %q, want sha256: and 64 hex digits, the same for equal bytes", got)
	}
	if got == CADigest(append(append([]byte{}, ca...), '\n')) {
		t.Error("CADigest is the same for different bytes")
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
