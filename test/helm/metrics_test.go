package helm

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// metricsCertSecret is the metrics.certSecret the rights test installs the
// chart with; metricsScraper the ServiceAccount it binds to the
// metrics-reader ClusterRole (metrics.reader.subjects).
const (
	metricsCertSecret = "fedwarden-metrics-tls"
	metricsScraper    = "metrics-scraper"
)

// metricsValues are the values the rights test installs the chart with: a
// metrics certificate, and a scraper bound to the metrics-reader role.
var metricsValues = []string{"--set", "metrics.certSecret=" + metricsCertSecret +
	",metrics.reader.subjects[0].kind=ServiceAccount,metrics.reader.subjects[0].name=" + metricsScraper +
	",metrics.reader.subjects[0].namespace=" + namespace}

// metricsServerName is the name the metrics certificate is issued for and
// the ServiceMonitor verifies: the metrics Service's.
const metricsServerName = "fedwarden-controller-manager-metrics." + namespace + ".svc"

// TestMetricsValues checks how the metrics values reach the Deployment and
// the RBAC.
func TestMetricsValues(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t, metricsValues...)
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	pod := d.Spec.Template.Spec
	c := pod.Containers[0]
	if !slices.Contains(c.Args, "--metrics-secure") || !slices.Contains(c.Args, "--metrics-cert-dir=/etc/fedwarden/metrics-certs") {
		t.Errorf("args %q lack --metrics-secure and --metrics-cert-dir=/etc/fedwarden/metrics-certs", c.Args)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != metricsCertSecret || *pod.Volumes[0].Secret.DefaultMode != 0o440 ||
		len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != "/etc/fedwarden/metrics-certs" || c.VolumeMounts[0].Name != pod.Volumes[0].Name {
		t.Errorf("volumes %+v, mounts %+v: want Secret %s read-only, mode 0440, at /etc/fedwarden/metrics-certs", pod.Volumes, c.VolumeMounts, metricsCertSecret)
	}
	if pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != *pod.SecurityContext.RunAsUser {
		t.Errorf("pod security context %+v: the container's user cannot read the certificate (mode 0440) without fsGroup", pod.SecurityContext)
	}
	var binding rbacv1.ClusterRoleBinding
	findNamed(t, objs, "ClusterRoleBinding", "fedwarden-metrics-reader", &binding)
	if binding.RoleRef.Name != "fedwarden-metrics-reader" ||
		!slices.Equal(binding.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: metricsScraper, Namespace: namespace}}) {
		t.Errorf("the metrics-reader binding gives %s to %+v", binding.RoleRef.Name, binding.Subjects)
	}

	// Plain HTTP: no flag, no review rights, no reader role.
	plain := mustRender(t, "--set", "metrics.secure=false")
	find(t, plain, "Deployment", &d)
	if slices.ContainsFunc(d.Spec.Template.Spec.Containers[0].Args, func(a string) bool {
		return strings.HasPrefix(a, "--metrics-secure") || strings.HasPrefix(a, "--metrics-cert-dir")
	}) {
		t.Errorf("metrics.secure=false: args %q", d.Spec.Template.Spec.Containers[0].Args)
	}
	var cr rbacv1.ClusterRole
	findNamed(t, plain, "ClusterRole", "fedwarden-controller-manager", &cr)
	for _, r := range cr.Rules {
		if slices.Contains(r.Resources, "tokenreviews") || slices.Contains(r.Resources, "subjectaccessreviews") {
			t.Errorf("metrics.secure=false: the ClusterRole still grants %+v", r)
		}
	}
	for _, o := range plain {
		if strings.Contains(o.GetName(), "metrics-reader") {
			t.Errorf("metrics.secure=false renders %s", describe(o))
		}
	}
}

// checkMetricsNeedAuthorization scrapes the metrics of a controller-manager
// run with the chart's arguments, rights and metricsValues, as Prometheus
// does with the chart's ServiceMonitor: over TLS, verifying the certificate
// with the CA of metrics.certSecret for the Service's name. Nobody without
// a token is answered (401), nor is a ServiceAccount without the
// metrics-reader role (403); the ServiceAccount bound to it gets the
// metrics. Plain HTTP gets nothing, and no token reaches the log.
func checkMetricsNeedAuthorization(t *testing.T, cm *fedtest.ControllerManager, ca *x509.CertPool) {
	t.Helper()
	if !strings.HasPrefix(cm.MetricsURL, "https://") {
		t.Fatalf("the controller-manager serves %s, want HTTPS", cm.MetricsURL)
	}
	kube, err := kubernetes.NewForConfig(fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	scraper := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca, ServerName: metricsServerName, MinVersion: tls.VersionTLS12},
	}}
	tests := []struct {
		name       string
		token      string
		wantStatus int
	}{
		{name: "no token", wantStatus: http.StatusUnauthorized},
		{name: "a token nobody issued", token: "not-a-token-of-this-cluster", wantStatus: http.StatusUnauthorized},
		{name: "a ServiceAccount without the metrics-reader role", token: serviceAccountToken(t, kube, "metrics-stranger"), wantStatus: http.StatusForbidden},
		{name: "the ServiceAccount bound to the metrics-reader role", token: serviceAccountToken(t, kube, metricsScraper), wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The role binding may take a moment to reach the authorizer's
			// cache; a refusal is cached for 30 s by the filter: retry.
			poll.Eventually(t, 90*time.Second, fmt.Sprintf("GET %s with %s to answer %d", cm.MetricsURL, tt.name, tt.wantStatus), func(ctx context.Context) (bool, string) {
				status, body, err := get(ctx, scraper, cm.MetricsURL, tt.token)
				if err != nil {
					return false, err.Error()
				}
				if status == http.StatusOK && !strings.Contains(body, "fedwarden_") {
					return false, "200 without Fedwarden's metrics: " + body[:min(len(body), 200)]
				}
				return status == tt.wantStatus, fmt.Sprintf("%d %s", status, body[:min(len(body), 200)])
			})
		})
	}
	// No token a scraper presented is in the log.
	log, err := os.ReadFile(cm.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		if tt.token != "" && strings.Contains(string(log), tt.token) {
			t.Errorf("the controller-manager's log holds the token of %s", tt.name)
		}
	}
	t.Run("plain HTTP", func(t *testing.T) {
		status, body, err := get(t.Context(), http.DefaultClient, "http"+strings.TrimPrefix(cm.MetricsURL, "https"), serviceAccountToken(t, kube, metricsScraper))
		if err == nil && (status == http.StatusOK || strings.Contains(body, "fedwarden_")) {
			t.Errorf("plain HTTP got %d and %d bytes of metrics", status, len(body))
		}
	})
}

// get GETs url with a bearer token, when there is one, and returns the
// status and body.
func get(ctx context.Context, c *http.Client, url, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serviceAccountToken creates the ServiceAccount name in the release
// namespace if it is missing, and returns a token of it from the
// TokenRequest API, valid for ten minutes.
func serviceAccountToken(t *testing.T, kube kubernetes.Interface, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if _, err := kube.CoreV1().ServiceAccounts(namespace).Create(t.Context(), sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	seconds := int64(600)
	tr, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(t.Context(), name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("requesting a token of ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// writeMetricsCertificate writes into dir a serving certificate for
// metricsServerName and 127.0.0.1, its key and its CA, as cert-manager
// writes a kubernetes.io/tls Secret (tls.crt, tls.key, ca.crt), and returns
// the CA.
func writeMetricsCertificate(dir string) (*x509.CertPool, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fedwarden-helm-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: metricsServerName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{metricsServerName}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, serving, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return pool, nil
}
