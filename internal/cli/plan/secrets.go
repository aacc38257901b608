package plan

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
)

// scrubber takes a Secret's values out of the text plan prints besides the
// diff, which memberdiff redacts: reasons, errors and the member's
// messages, which may quote the object (a policy's messageExpression, a
// webhook's answer). The rule is the controller's and the agent's
// (scrub.Scrubber). It does nothing for other kinds.
type scrubber struct {
	values *scrub.Scrubber
}

// newScrubber returns the scrubber of desired, a copy of the resource.
func newScrubber(in *planInput, desired *unstructured.Unstructured) *scrubber {
	if !scrub.IsSecret(in.s.kind.Type.Target) {
		return nil
	}
	sc := &scrubber{values: scrub.For(in.s.kind.Type.Target)}
	sc.add(desired)
	return sc
}

// add adds the values of obj, a Secret (nil is no Secret).
func (sc *scrubber) add(obj *unstructured.Unstructured) {
	if sc == nil || obj == nil {
		return
	}
	sc.values.Add(obj.Object)
}

// scrub takes the values out of c's texts.
func (sc *scrubber) scrub(c *Cluster) {
	if sc == nil {
		return
	}
	var answer error
	if c.DryRun != nil {
		answer = c.DryRun.answer
		c.DryRun.Message = sc.values.Scrub(c.DryRun.Message, answer)
	}
	c.Reason, c.Error = sc.values.Scrub(c.Reason, nil), sc.values.Scrub(c.Error, answer)
}

// context returns ctx carrying the scrubber, for the warnings the member
// answers a dry run with (scrub.WarningLogger logs them).
func (sc *scrubber) context(ctx context.Context) context.Context {
	if sc == nil {
		return ctx
	}
	return scrub.NewContext(ctx, sc.values)
}
