package clusterhealth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/egress"
)

// outcome classifies one probe.
type outcome int

const (
	// probeReady: /readyz (or /healthz) answered 200.
	probeReady outcome = iota
	// probeNotReady: the API server answered, but not 200.
	probeNotReady
	// probeUnreachable: no answer (refused, reset, timed out, no route).
	probeUnreachable
	// probeUntrusted: the TLS handshake failed verification.
	probeUntrusted
	// probeRejected: the API server refused the credentials (401).
	probeRejected
)

// probeResult is what one probe saw. Message is stable for a given state of
// the member (no ports, counters or times), so that repeated probes of an
// unchanged member yield identical conditions.
type probeResult struct {
	outcome outcome
	message string
	version string // gitVersion, when the probe succeeded and /version answered
	// clusterID is the member's kube-system namespace UID, when the probe
	// succeeded and the identity may read that namespace.
	clusterID string
	// decisive: the result is taken at once, without thresholds.
	decisive bool
}

// maxBodyInMessage bounds how much of a failing probe's body a condition shows.
const maxBodyInMessage = 200

// probe asks the member's API server whether it is ready: /readyz, or
// /healthz where /readyz is not served or not allowed; on success it also
// reads /version.
func probe(ctx context.Context, rc rest.Interface, endpoint string) probeResult {
	path := "/readyz"
	code, body, err := get(ctx, rc, path)
	if err == nil && (code == http.StatusNotFound || code == http.StatusForbidden) {
		path = "/healthz"
		code, body, err = get(ctx, rc, path)
	}
	if err != nil {
		return transportFailure(err, endpoint)
	}
	switch {
	case code == http.StatusUnauthorized:
		return probeResult{outcome: probeRejected, message: fmt.Sprintf("%s answered 401 Unauthorized: the member rejects the token in the cluster's Secret (its ServiceAccount or token Secret may have been deleted in the member, or the Secret edited on the host); join the cluster again with 'fedwarden join'", endpoint)}
	case code != http.StatusOK:
		return probeResult{outcome: probeNotReady, message: fmt.Sprintf("%s%s answered %d: %s", endpoint, path, code, summarize(body))}
	}
	res := probeResult{outcome: probeReady, message: fmt.Sprintf("%s%s answered ok", endpoint, path)}
	if _, raw, err := get(ctx, rc, "/version"); err == nil {
		var info version.Info
		if json.Unmarshal(raw, &info) == nil {
			res.version = info.GitVersion
		}
	}
	res.clusterID = readClusterID(ctx, rc)
	return res
}

// readClusterID returns the UID of the member's kube-system namespace,
// which names the cluster whatever the endpoint it is reached by, or "" when
// it cannot be read (an identity without the right to, as KubeFed's may be).
func readClusterID(ctx context.Context, rc rest.Interface) string {
	code, raw, err := get(ctx, rc, "/api/v1/namespaces/"+metav1.NamespaceSystem)
	if err != nil || code != http.StatusOK {
		return ""
	}
	var ns metav1.PartialObjectMetadata
	if json.Unmarshal(raw, &ns) != nil {
		return ""
	}
	return string(ns.UID)
}

// get returns the status code and body of a GET of path; err is set only
// when no HTTP answer came back.
func get(ctx context.Context, rc rest.Interface, path string) (int, []byte, error) {
	res := rc.Get().AbsPath(path).Do(ctx)
	var code int
	res.StatusCode(&code)
	body, err := res.Raw()
	if code != 0 {
		return code, body, nil
	}
	if err == nil {
		err = errors.New("no answer")
	}
	return 0, nil, err
}

// transportFailure turns an error without an HTTP answer into a result whose
// message names the cause without anything that varies between attempts.
func transportFailure(err error, endpoint string) probeResult {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		verification     *tls.CertificateVerificationError
		dnsErr           *net.DNSError
	)
	switch {
	case errors.Is(err, clustercache.ErrNotAnswering):
		return unreachable(endpoint, "requests to it wait with no answer (a hung API server or a stuck proxy): they are paused and tried again with a backoff")
	case errors.Is(err, egress.ErrRefused):
		return unreachable(endpoint, "not contacted: "+refusal(err))
	case errors.As(err, &unknownAuthority):
		return untrusted(endpoint, "its serving certificate is not signed by a CA in the cluster's CA bundle (spec.caBundle)")
	case errors.As(err, &hostname):
		return untrusted(endpoint, "its serving certificate is not valid for "+hostname.Host)
	case errors.As(err, &invalid):
		return untrusted(endpoint, invalid.Error())
	case errors.As(err, &verification):
		return untrusted(endpoint, verification.Err.Error())
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return unreachable(endpoint, "no answer before the probe timeout")
	case errors.Is(err, syscall.ECONNREFUSED):
		return unreachable(endpoint, "connection refused")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return unreachable(endpoint, "connection closed by the server")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return unreachable(endpoint, "no route to host")
	case errors.As(err, &dnsErr):
		return unreachable(endpoint, "cannot resolve "+dnsErr.Name)
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return unreachable(endpoint, strings.TrimSpace(err.Error()))
}

// refusal is the reason egress gave for not dialing, without the request
// that url.Error adds.
func refusal(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func unreachable(endpoint, why string) probeResult {
	return probeResult{outcome: probeUnreachable, message: fmt.Sprintf("%s: %s", endpoint, why)}
}

func untrusted(endpoint, why string) probeResult {
	return probeResult{outcome: probeUntrusted, message: fmt.Sprintf("%s answered, but TLS verification failed: %s; set spec.caBundle to the CA that signs the member API server's certificate", endpoint, why)}
}

// summarize returns the failed checks of a /readyz or /healthz body
// ("[-]etcd failed: reason withheld"), else its first line, bounded.
func summarize(body []byte) string {
	s := strings.TrimSpace(string(body))
	var failed []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "[-]") {
			failed = append(failed, strings.TrimPrefix(line, "[-]"))
		}
	}
	if len(failed) > 0 {
		s = "failed checks: " + strings.Join(failed, "; ")
	} else if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > maxBodyInMessage {
		cut := maxBodyInMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut-- // never inside a character: the condition must read back as written
		}
		s = s[:cut] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
