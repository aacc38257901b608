package metricsendpoint

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

func TestFlags(t *testing.T) {
	t.Parallel()
	certs := t.TempDir()
	for _, name := range []string{CertName, KeyName} {
		if err := os.WriteFile(filepath.Join(certs, name), []byte("pem"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		args    []string
		want    Options
		wantErr string
	}{
		{name: "defaults", want: Options{BindAddress: ":8080"}},
		{name: "secure, self-signed", args: []string{"--metrics-secure", "--metrics-bind-address=:8443"}, want: Options{BindAddress: ":8443", Secure: true}},
		{name: "secure with a certificate", args: []string{"--metrics-secure", "--metrics-cert-dir", certs}, want: Options{BindAddress: ":8080", Secure: true, CertDir: certs}},
		{name: "a certificate over plain HTTP", args: []string{"--metrics-cert-dir", certs}, wantErr: "--metrics-cert-dir needs --metrics-secure"},
		{name: "no certificate in the directory", args: []string{"--metrics-secure", "--metrics-cert-dir", t.TempDir()},
			wantErr: "--metrics-cert-dir: stat "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := Options{BindAddress: ":8080"}
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			o.AddFlags(fs, "the host")
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			err := o.Validate()
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Validate: %v, want an error saying %q", err, tt.wantErr)
				}
				if err != nil && tt.name == "no certificate in the directory" && (!strings.Contains(err.Error(), CertName) || !strings.Contains(err.Error(), KeyName)) {
					t.Errorf("Validate: %v, want both missing files named", err)
				}
			case err != nil:
				t.Errorf("Validate: %v", err)
			case o != tt.want:
				t.Errorf("options %+v, want %+v", o, tt.want)
			}
		})
	}
}

func TestServer(t *testing.T) {
	t.Parallel()
	plain := Options{BindAddress: "127.0.0.1:0"}.Server(nil)
	if plain.SecureServing || plain.FilterProvider != nil || plain.BindAddress != "127.0.0.1:0" {
		t.Errorf("plain HTTP: %+v", plain)
	}
	for _, reviewer := range []*rest.Config{nil, {Host: "https://127.0.0.1:6443"}} {
		s := Options{BindAddress: ":8443", Secure: true, CertDir: "/certs"}.Server(reviewer)
		if !s.SecureServing || s.FilterProvider == nil || s.CertDir != "/certs" || s.CertName != CertName || s.KeyName != KeyName {
			t.Errorf("secure, reviewer %v: %+v", reviewer, s)
		}
		manager := &rest.Config{Host: "https://127.0.0.1:7443"}
		hc, err := rest.HTTPClientFor(manager)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.FilterProvider(manager, hc); err != nil {
			t.Errorf("building the filter, reviewer %v: %v", reviewer, err)
		}
		c := &tls.Config{NextProtos: []string{"h2"}}
		for _, opt := range s.TLSOpts {
			opt(c)
		}
		if c.MinVersion != tls.VersionTLS12 || len(c.NextProtos) != 1 || c.NextProtos[0] != "http/1.1" {
			t.Errorf("TLS config: min version %x, protocols %v; want TLS 1.2 and HTTP/1.1 only", c.MinVersion, c.NextProtos)
		}
	}
	if s := (Options{Secure: true}).Server(nil); s.CertDir != "" {
		t.Errorf("no --metrics-cert-dir: cert dir %q, want controller-runtime's self-signed certificate", s.CertDir)
	}
}
