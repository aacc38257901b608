// Package metricsendpoint holds the flags of the Prometheus /metrics
// endpoint of `fedwarden controller-manager` and `fedwarden agent`: where
// it listens, and whether it is served over HTTPS to callers a Kubernetes
// API server authenticates (TokenReview) and authorizes (SubjectAccessReview
// of get on the non-resource URL /metrics).
package metricsendpoint

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The files of a serving certificate in --metrics-cert-dir, as in a Secret
// of type kubernetes.io/tls.
const (
	CertName = "tls.crt"
	KeyName  = "tls.key"
)

// Options say how /metrics is served.
type Options struct {
	// BindAddress is where it listens; "0" disables it.
	BindAddress string
	// Secure serves it over HTTPS, to authenticated and authorized callers
	// only.
	Secure bool
	// CertDir holds tls.crt and tls.key; empty for a self-signed
	// certificate made at start.
	CertDir string
}

// AddFlags adds --metrics-bind-address, --metrics-secure and
// --metrics-cert-dir to fs; reviewer names the cluster whose API server
// checks the callers, for the help.
func (o *Options) AddFlags(fs *pflag.FlagSet, reviewer string) {
	fs.StringVar(&o.BindAddress, "metrics-bind-address", o.BindAddress, "address of the Prometheus /metrics endpoint (default: every interface in a pod, 127.0.0.1 elsewhere); 0 disables it")
	fs.BoolVar(&o.Secure, "metrics-secure", o.Secure, "serve /metrics over HTTPS, only to callers that "+reviewer+"'s API server authenticates (TokenReview) "+
		"and authorizes to get the non-resource URL /metrics (SubjectAccessReview); without it, /metrics is plain HTTP to anyone who reaches the address")
	fs.StringVar(&o.CertDir, "metrics-cert-dir", o.CertDir, "with --metrics-secure: directory holding the serving certificate and key, "+CertName+" and "+KeyName+
		" (a kubernetes.io/tls Secret mounted as a volume), reloaded when they change; default: a self-signed certificate made at start, which scrapers cannot verify")
}

// Validate checks the flags together, and that the certificate files are
// there: controller-runtime would quietly fall back to a self-signed
// certificate, which no scraper that verifies it accepts.
func (o Options) Validate() error {
	if o.CertDir == "" {
		return nil
	}
	if !o.Secure {
		return errors.New("--metrics-cert-dir needs --metrics-secure: plain HTTP uses no certificate")
	}
	var errs []error
	for _, name := range []string{CertName, KeyName} {
		path := filepath.Join(o.CertDir, name)
		if _, err := os.Stat(path); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-cert-dir: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Server returns the options of the manager's metrics server. Callers are
// checked by the API server of reviewer; nil means the manager's own
// cluster.
func (o Options) Server(reviewer *rest.Config) metricsserver.Options {
	s := metricsserver.Options{BindAddress: o.BindAddress}
	if !o.Secure {
		return s
	}
	s.SecureServing = true
	s.FilterProvider = withAuthenticationAndAuthorization
	if reviewer != nil {
		s.FilterProvider = func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
			hc, err := rest.HTTPClientFor(reviewer)
			if err != nil {
				return nil, fmt.Errorf("building the client that reviews /metrics callers: %w", err)
			}
			return withAuthenticationAndAuthorization(reviewer, hc)
		}
	}
	if o.CertDir != "" {
		s.CertDir, s.CertName, s.KeyName = o.CertDir, CertName, KeyName
	}
	s.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = tls.VersionTLS12
		// HTTP/1.1 only: HTTP/2 brings the stream-reset and
		// CONTINUATION floods (CVE-2023-44487, CVE-2023-45288) to an
		// endpoint that gains nothing from it.
		c.NextProtos = []string{"http/1.1"}
	}}
	return s
}
