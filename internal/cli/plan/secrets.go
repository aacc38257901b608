package plan

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/memberdiff"
)

// minScrubbed is the length under which a Secret's value is not looked for
// in messages: so short a value is found by chance in any text (as
// memberdiff does for annotations).
const minScrubbed = 4

// redactedValue stands for a Secret's value found in a message.
const redactedValue = "<redacted>"

// scrubber takes a Secret's values out of the text plan prints besides the
// diff, which memberdiff redacts: reasons, errors and the member's
// messages, which may quote the object (a policy's messageExpression, a
// webhook's answer). It does nothing for other kinds.
type scrubber struct {
	values []string
}

// newScrubber returns the scrubber of desired, a copy of the resource.
func newScrubber(in *planInput, desired *unstructured.Unstructured) *scrubber {
	if !memberdiff.IsSecret(in.s.kind.Type.Target) {
		return nil
	}
	sc := &scrubber{}
	sc.add(desired)
	return sc
}

// add adds the values of obj, a Secret (nil is no Secret).
func (sc *scrubber) add(obj *unstructured.Unstructured) {
	if sc == nil || obj == nil {
		return
	}
	for _, field := range []string{"data", "stringData"} {
		m, _ := obj.Object[field].(map[string]any)
		for _, v := range m {
			s := fmt.Sprint(v)
			raw := s
			if field == "data" {
				if b, err := base64.StdEncoding.DecodeString(s); err == nil {
					raw = string(b)
				}
			}
			for _, form := range []string{raw, base64.StdEncoding.EncodeToString([]byte(raw))} {
				if len(form) >= minScrubbed {
					sc.values = append(sc.values, form)
				}
			}
		}
	}
}

// scrub takes the values out of c's texts.
func (sc *scrubber) scrub(c *Cluster) {
	if sc == nil {
		return
	}
	// The longest first: a value that holds another is taken out whole.
	slices.SortFunc(sc.values, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	c.Reason, c.Error = sc.text(c.Reason), sc.text(c.Error)
	if c.DryRun != nil {
		c.DryRun.Message = sc.text(c.DryRun.Message)
	}
}

func (sc *scrubber) text(s string) string {
	for _, v := range sc.values {
		s = strings.ReplaceAll(s, v, redactedValue)
	}
	return s
}
