package scrub

import (
	"context"

	"k8s.io/klog/v2"
)

// withheldWarning stands for a member's warning that may quote a value.
const withheldWarning = "a warning of the member's admission, withheld: it may quote the Secret's values"

type contextKey struct{}

// NewContext returns ctx carrying s: the warnings a member answers to a
// request made with it are scrubbed by s (see WarningLogger). A nil s
// leaves ctx as it is.
func NewContext(ctx context.Context, s *Scrubber) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, contextKey{}, s)
}

// FromContext returns the Scrubber ctx carries, nil when none.
func FromContext(ctx context.Context) *Scrubber {
	s, _ := ctx.Value(contextKey{}).(*Scrubber)
	return s
}

// Warning returns a member's warning (a policy's or a webhook's text, as
// their answer's own text) with the values taken out, or a sentence that
// says it was withheld when it is not certain to hold none (see Scrubber).
// A nil Scrubber returns text.
func (s *Scrubber) Warning(text string) string {
	if s == nil {
		return text
	}
	if !s.certain(text) {
		return withheldWarning
	}
	return s.takeOut(text)
}

// WarningLogger logs the warnings a member answers with (its admission's:
// a ValidatingAdmissionPolicy bound with action Warn, a webhook's
// warnings), as client-go's default handler does, scrubbed by the
// Scrubber of the request's context: a warning on a Secret may quote its
// values.
type WarningLogger struct{}

// HandleWarningHeaderWithContext implements rest.WarningHandlerWithContext.
func (WarningLogger) HandleWarningHeaderWithContext(ctx context.Context, code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	klog.FromContext(ctx).Info("Warning: " + FromContext(ctx).Warning(text))
}
