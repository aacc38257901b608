package clusterhealth

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/fedwarden/fedwarden/internal/egress"
)

func TestTransportFailure(t *testing.T) {
	const ep = "https://10.0.0.1:6443"
	refused := &url.Error{Op: "Get", URL: ep + "/readyz", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	reset := &url.Error{Op: "Get", URL: ep + "/readyz", Err: &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{Port: 51234}, Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	tests := []struct {
		name        string
		err         error
		want        outcome
		wantMessage string
	}{
		{"refused", refused, probeUnreachable, "connection refused"},
		{"reset names no ephemeral port", reset, probeUnreachable, "connection closed by the server"},
		{"timeout", fmt.Errorf("wrapped: %w", context.DeadlineExceeded), probeUnreachable, "no answer before the probe timeout"},
		{"outside --member-networks", &url.Error{Op: "Get", URL: ep, Err: fmt.Errorf("10.0.0.1 is outside 127.0.0.0/8: %w", egress.ErrRefused)}, probeUnreachable, "not contacted: 10.0.0.1 is outside 127.0.0.0/8: refused by --member-networks"},
		{"dns", &url.Error{Op: "Get", URL: ep, Err: &net.DNSError{Name: "nowhere.example", Err: "no such host"}}, probeUnreachable, "cannot resolve nowhere.example"},
		{"unknown authority", &url.Error{Op: "Get", URL: ep, Err: x509.UnknownAuthorityError{}}, probeUntrusted, "not signed by a CA in the cluster's CA bundle"},
		{"wrong host", &url.Error{Op: "Get", URL: ep, Err: x509.HostnameError{Host: "10.0.0.1", Certificate: &x509.Certificate{}}}, probeUntrusted, "not valid for 10.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transportFailure(tt.err, ep)
			if got.outcome != tt.want || !strings.Contains(got.message, tt.wantMessage) {
				t.Errorf("got %v %q, want %v containing %q", got.outcome, got.message, tt.want, tt.wantMessage)
			}
			if strings.Contains(got.message, "51234") {
				t.Errorf("message holds an ephemeral port: %q", got.message)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	body := "[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\n[-]poststarthook/rbac failed: reason withheld\nreadyz check failed\n"
	if got, want := summarize([]byte(body)), "failed checks: etcd failed: reason withheld; poststarthook/rbac failed: reason withheld"; got != want {
		t.Errorf("summarize = %q, want %q", got, want)
	}
	if got := summarize([]byte(strings.Repeat("x", 500))); len(got) > maxBodyInMessage+4 {
		t.Errorf("summarize did not bound a long body: %d bytes", len(got))
	}
	if got := summarize([]byte("x" + strings.Repeat("é", 500))); !utf8.ValidString(got) {
		t.Errorf("summarize cut a long body inside a character: %q", got)
	}
	if got := summarize(nil); got != "(empty body)" {
		t.Errorf("summarize(nil) = %q", got)
	}
}
