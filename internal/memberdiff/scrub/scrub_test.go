package scrub

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var secretKind = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestScrubberTakesOutValues(t *testing.T) {
	t.Parallel()
	desired := map[string]any{
		"data":       map[string]any{"password": b64("hunter2-hunter2")},
		"stringData": map[string]any{"token": "tok-abcdef", "multi": "line one\nline \"two\""},
	}
	live := map[string]any{"data": map[string]any{"password": b64("edited-in-member")}}
	s := For(secretKind, desired)
	s.Add(live, nil)
	for _, tt := range []struct{ name, in, want string }{
		{"raw", "value hunter2-hunter2 and tok-abcdef", "value <redacted> and <redacted>"},
		{"base64", "got " + b64("hunter2-hunter2") + ".", "got <redacted>."},
		{"stringData base64", "got " + b64("tok-abcdef"), "got <redacted>"},
		{"live value", "member has edited-in-member", "member has <redacted>"},
		{"JSON-escaped", `{"multi":"line one\nline \"two\""}`, `{"multi":"<redacted>"}`},
		{"no value", "cluster m1 refuses Fedwarden access", "cluster m1 refuses Fedwarden access"},
	} {
		if got := s.Scrub(tt.in, nil); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestScrubberOverlappingValues(t *testing.T) {
	t.Parallel()
	// Two values that share "defgh": taking out the longer first must not
	// leave the other's tail, nor the shorter first the longer's head.
	s := For(secretKind, map[string]any{"stringData": map[string]any{"a": "abcdefgh", "b": "defghijkl", "c": "abcd"}})
	for in, want := range map[string]string{
		"x abcdefghijkl y": "x <redacted> y",
		"x abcdefgh y":     "x <redacted> y",
		"abcdabcd":         "<redacted>",
		"defghijkl":        "<redacted>",
	} {
		if got := s.Scrub(in, nil); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func TestScrubberOtherKinds(t *testing.T) {
	t.Parallel()
	s := For(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, map[string]any{"data": map[string]any{"k": "visible-value"}})
	if s != nil {
		t.Fatalf("a ConfigMap's scrubber: %+v, want nil", s)
	}
	if got := s.Scrub("visible-value", nil); got != "visible-value" {
		t.Errorf("nil scrubber: %q", got)
	}
}

// policyError is the kube-apiserver's answer when a ValidatingAdmissionPolicy
// refuses an object.
func policyError(message string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 422, Reason: metav1.StatusReasonInvalid,
		Message: "secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'strong' with binding 'strong' denied request: " + message,
	}}
}

func TestScrubberPolicyMessage(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t-hunter2-value"
	s := For(secretKind, map[string]any{"data": map[string]any{"password": b64(value)}})
	wrap := func(err error) string { return fmt.Errorf("writing Secret db to cluster m2: %w", err).Error() }
	const prefix = "writing Secret db to cluster m2: secrets \"db\" is forbidden: ValidatingAdmissionPolicy 'strong' with binding 'strong' denied request"
	const withheld = prefix + " (reason Invalid, code 422; its message is withheld: it may quote the Secret's values)"
	for _, tt := range []struct{ name, message, want string }{
		{"whole value, base64", "password " + b64(value) + " is weak", prefix + ": password <redacted> is weak"},
		{"whole value, raw", "password " + value + " is weak", prefix + ": password <redacted> is weak"},
		{"no value", "a password needs 32 bytes", prefix + ": a password needs 32 bytes"},
		{"a prefix", "password starting " + value[:10] + " is weak", withheld},
		{"upper-cased", "password " + strings.ToUpper(value) + " is weak", withheld},
		{"part of the base64", "password " + b64(value)[4:20] + " is weak", withheld},
	} {
		err := policyError(tt.message)
		if got := s.Scrub(wrap(err), err); got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	// Without the error, only the text: who refused is kept.
	err := policyError("password starting " + value[:10])
	if got, want := s.Scrub(wrap(err), nil), prefix+" (its message is withheld: it may quote the Secret's values)"; got != want {
		t.Errorf("without the answer:\n got %q\nwant %q", got, want)
	}
}

func TestScrubberShortValues(t *testing.T) {
	t.Parallel()
	// A value of 3 bytes cannot be looked for: it is left in texts that are
	// the API server's own, and a policy's text is withheld.
	s := For(secretKind, map[string]any{"stringData": map[string]any{"pin": "123", "password": "long-enough-value"}})
	if got := s.Scrub("pin 123 and long-enough-value", nil); got != "pin 123 and <redacted>" {
		t.Errorf("short value, not a policy's text: %q", got)
	}
	webhook := &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 400, Reason: "pin-123-is-weak",
		Message: `admission webhook "pins.example.com" denied the request: pin 123 is weak`}}
	want := `admission webhook "pins.example.com" denied the request (code 400; its message is withheld: it may quote the Secret's values)`
	if got := s.Scrub(webhook.Error(), webhook); got != want {
		t.Errorf("short value, a webhook's text:\n got %q\nwant %q", got, want)
	}
}

func TestScrubberWebhookCallFailure(t *testing.T) {
	t.Parallel()
	s := For(secretKind, map[string]any{"stringData": map[string]any{"password": "abcdefghijklmnop"}})
	text := `Internal error occurred: failed calling webhook "v.example.com": the server responded with "bad password abcdefgh"`
	want := `Internal error occurred: failed calling webhook "v.example.com" (its message is withheld: it may quote the Secret's values)`
	if got := s.Scrub(text, nil); got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

func TestScrubberWarnings(t *testing.T) {
	t.Parallel()
	s := For(secretKind, map[string]any{"stringData": map[string]any{"password": "abcdefghijklmnop"}})
	ctx := NewContext(t.Context(), s)
	for in, want := range map[string]string{
		"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'p': password abcdefghijklmnop is weak": "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'p': password <redacted> is weak",
		"password starting abcdefghij is weak": withheldWarning,
		"a password needs 32 bytes":            "a password needs 32 bytes",
	} {
		if got := FromContext(ctx).Warning(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
	if got := FromContext(t.Context()).Warning("abcdefghijklmnop"); got != "abcdefghijklmnop" {
		t.Errorf("no scrubber in the context: %q", got)
	}
}
