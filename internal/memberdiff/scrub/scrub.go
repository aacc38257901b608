// Package scrub takes the values of Secrets out of what Fedwarden records
// from a member or prints, by one rule for each form:
//
//   - texts (Scrubber): every value becomes Redacted, in propagation's
//     cluster messages, the Pull agent's and fedwarden plan's;
//   - objects (redact.go): each value of a Secret becomes a marker of its
//     length, <redacted: N bytes>, in the copies a diff shows (RedactDiff:
//     fedwarden diff, plan's diffs, the console's diff view) and the
//     revisions fedwarden rollout history shows (RedactRevision,
//     RedactCause).
package scrub

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// MinLength is the length under which a Secret's value is not looked for
// in a text: a value that short is found by chance in any text.
const MinLength = 4

// Fields are the fields of a Secret that hold its values.
var Fields = []string{"data", "stringData"}

// IsSecret tells whether gvk is the core Secret, whose values are
// redacted.
func IsSecret(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "" && gvk.Kind == "Secret"
}

// HoldsSecretValues tells whether an object of gvk holds a Secret's values:
// a core Secret (IsSecret), or a federated resource of Secrets, whose
// template is one. A federated kind is named after its target
// ("Federated" + Kind) by fedwarden enable, kubefedctl and the dependencies
// stage.
func HoldsSecretValues(gvk schema.GroupVersionKind) bool {
	return IsSecret(gvk) || (gvk.Group == federatedGroup && gvk.Kind == "Federated"+"Secret")
}

// federatedGroup is the API group of the federated kinds.
const federatedGroup = "types.kubefed.io"

// Decode returns the bytes a value of field stands for: base64-decoded in
// data (as written, if it is not base64), as written in stringData.
func Decode(field string, v any) []byte {
	s, ok := v.(string)
	if !ok {
		s = fmt.Sprint(v)
	}
	if field == "data" {
		if b, err := base64.StdEncoding.DecodeString(s); err == nil {
			return b
		}
	}
	return []byte(s)
}

// Redacted stands, in a text, for a Secret's value taken out of it.
const Redacted = "<redacted>"

// minFragment is the length of the runs of a value looked for in a
// policy's or webhook's own text once the whole values are taken out: a
// run that long of a random value is no chance, and a text that holds one
// quotes part of a value (a prefix, a value cut to a length).
const minFragment = 8

// denier finds, in a member's answer, who refused the object at its
// admission, as the kube-apiserver words it: a webhook
// ("admission webhook "w" denied the request", or a failure to call it,
// whose answer may be the webhook's own text), a ValidatingAdmissionPolicy,
// or a policy of the generic dispatcher (MutatingAdmissionPolicy). What
// follows is their own text, built from the object.
var denier = regexp.MustCompile(`admission webhook "[^"]*" denied the request|failed calling webhook "[^"]*"|` +
	`(?:ValidatingAdmissionPolicy|MutatingAdmissionPolicy|policy) ['"][^'"]*['"](?: with binding '[^']*')? denied request`)

// Scrubber takes the values of Secrets out of the texts Fedwarden records
// from a member, or prints: its errors, the messages of its admission, a
// plan's reasons. One rule, for every place such a text goes (a
// ClusterPropagatedVersion's entry, a resource's status and conditions,
// Events, logs, notifications, fedwarden plan):
//
//   - every value of the Secrets it was given (data, decoded, and
//     stringData; desired and live) is replaced by Redacted wherever it
//     appears, as written, base64-encoded, and escaped as JSON or a Go
//     quoted string show it;
//   - the text a policy or a webhook of the member wrote (see denier) is
//     kept only when it is certain that it holds no value: every value is
//     long enough to be looked for (MinLength bytes), and, the values
//     taken out, it holds no run of minFragment bytes of one of them, in
//     either case (a prefix, a value cut short or upper-cased). Otherwise
//     only who refused is kept, with the answer's reason and HTTP code: a
//     third party's text may quote a value in any form (decoded, cut,
//     changed), and one we cannot look for is one we cannot take out.
//
// The API server's own messages quote no value of a Secret (its validation
// names keys, never values): they are kept, the values taken out.
//
// A nil Scrubber, the one of a kind that is not a Secret, changes nothing.
type Scrubber struct {
	// forms are the values in every form they are looked for in.
	forms []string
	// fragments are the runs of minFragment bytes of the values, raw and
	// base64, lower-cased.
	fragments map[string]bool
	// short: a value is shorter than MinLength bytes, too short to be
	// looked for.
	short bool
}

// For returns the scrubber of objects of kind gvk, nil when gvk is
// not a Secret: the values of objects (Secrets, or a federated Secret's
// template, as maps) are taken out.
func For(gvk schema.GroupVersionKind, objects ...map[string]any) *Scrubber {
	if !IsSecret(gvk) {
		return nil
	}
	s := &Scrubber{fragments: map[string]bool{}}
	s.Add(objects...)
	return s
}

// Add adds the values of objects, Secrets (nil ones are none). It does
// nothing on a nil Scrubber.
func (s *Scrubber) Add(objects ...map[string]any) {
	if s == nil {
		return
	}
	for _, obj := range objects {
		for _, field := range Fields {
			m, _ := obj[field].(map[string]any)
			for _, v := range m {
				s.addValue(Decode(field, v))
			}
		}
	}
}

func (s *Scrubber) addValue(v []byte) {
	switch {
	case len(v) == 0:
		return
	case len(v) < MinLength:
		s.short = true
		return
	}
	raw, b64 := string(v), base64.StdEncoding.EncodeToString(v)
	s.forms = append(s.forms, raw, b64, jsonEscaped(raw), goQuoted(raw))
	for _, form := range []string{raw, b64} {
		form = strings.ToLower(form)
		for i := 0; i+minFragment <= len(form); i++ {
			s.fragments[form[i:i+minFragment]] = true
		}
	}
}

// jsonEscaped is raw as a JSON string holds it, without its quotes.
func jsonEscaped(raw string) string {
	b, _ := json.Marshal(raw)
	return string(b[1 : len(b)-1])
}

// goQuoted is raw as %q writes it, without its quotes.
func goQuoted(raw string) string {
	q := strconv.Quote(raw)
	return q[1 : len(q)-1]
}

// Scrub returns text without the values (see Scrubber). answer is the
// member's error that text quotes, if any: its reason and code are kept
// when a policy's or webhook's text is not. nil answer: text is all the
// member's answer from the first denier on.
func (s *Scrubber) Scrub(text string, answer error) string {
	if s == nil {
		return text
	}
	return s.takeOut(s.withhold(text, answer))
}

// withhold replaces, in text, the policy's or webhook's own text that is
// not certain to hold no value (see Scrubber) by a sentence naming them.
func (s *Scrubber) withhold(text string, answer error) string {
	region, code, reason := text, int32(0), metav1.StatusReason("")
	var status apierrors.APIStatus
	if errors.As(answer, &status) && status.Status().Message != "" && strings.Contains(text, status.Status().Message) {
		region, code, reason = status.Status().Message, status.Status().Code, status.Status().Reason
	}
	loc := denier.FindStringIndex(region)
	if loc == nil || s.certain(region[loc[1]:]) {
		return text
	}
	kept := region[:loc[1]] + withheldNote(code, reason)
	return strings.ReplaceAll(text, region, kept)
}

// withheldNote says that a policy's or webhook's text was withheld, with
// the answer's reason, when it is one of the API's, and code.
func withheldNote(code int32, reason metav1.StatusReason) string {
	var parts []string
	if knownReason(reason) {
		parts = append(parts, "reason "+string(reason))
	}
	if code != 0 {
		parts = append(parts, fmt.Sprintf("code %d", code))
	}
	note := " (its message is withheld: it may quote the Secret's values)"
	if len(parts) > 0 {
		note = " (" + strings.Join(parts, ", ") + "; its message is withheld: it may quote the Secret's values)"
	}
	return note
}

// knownReason tells whether reason is one of the API's: a webhook may set
// any text as its answer's reason, a value too.
func knownReason(reason metav1.StatusReason) bool {
	switch reason {
	case metav1.StatusReasonUnauthorized, metav1.StatusReasonForbidden, metav1.StatusReasonNotFound,
		metav1.StatusReasonAlreadyExists, metav1.StatusReasonConflict, metav1.StatusReasonGone,
		metav1.StatusReasonInvalid, metav1.StatusReasonServerTimeout, metav1.StatusReasonStoreReadError,
		metav1.StatusReasonTimeout, metav1.StatusReasonTooManyRequests, metav1.StatusReasonBadRequest,
		metav1.StatusReasonMethodNotAllowed, metav1.StatusReasonNotAcceptable, metav1.StatusReasonRequestEntityTooLarge,
		metav1.StatusReasonUnsupportedMediaType, metav1.StatusReasonInternalError, metav1.StatusReasonExpired,
		metav1.StatusReasonServiceUnavailable:
		return true
	}
	return false
}

// certain tells whether a policy's or webhook's text, once the values are
// taken out, holds none of them: no value is too short to be looked for,
// and no run of minFragment bytes of one is left.
func (s *Scrubber) certain(own string) bool {
	if s.short {
		return false
	}
	left := strings.ToLower(s.takeOut(own))
	for i := 0; i+minFragment <= len(left); i++ {
		if s.fragments[left[i:i+minFragment]] {
			return false
		}
	}
	return true
}

// takeOut replaces every value in text by Redacted. Values that overlap or
// touch are taken out as one, so that no part of one is left when another
// is taken out first.
func (s *Scrubber) takeOut(text string) string {
	hit := make([]bool, len(text))
	found := false
	for _, form := range s.forms {
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], form)
			if i < 0 {
				break
			}
			for j := from + i; j < from+i+len(form); j++ {
				hit[j] = true
			}
			found = true
			from += i + 1
		}
	}
	if !found {
		return text
	}
	var b strings.Builder
	for i := 0; i < len(text); i++ {
		switch {
		case !hit[i]:
			b.WriteByte(text[i])
		case i == 0 || !hit[i-1]:
			b.WriteString(Redacted)
		}
	}
	return b.String()
}
