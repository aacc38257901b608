package copyhealth

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// Evaluator computes the health of member objects of any kind: the kind's
// spec.healthRules first, then its built-in rules. Rules are compiled once,
// when they are set; Evaluate only runs them, and is safe to call from many
// goroutines while SetRules changes a kind's rules.
type Evaluator struct {
	opts    options
	builtin map[schema.GroupKind]*Rules

	// mu serializes SetRules; Evaluate reads user without it.
	mu   sync.Mutex
	user atomic.Pointer[map[schema.GroupKind]userRules]
}

// userRules are one kind's spec.healthRules: compiled, or the error that
// they did not compile with.
type userRules struct {
	source []corev1beta1.HealthRule
	rules  *Rules
	err    error
}

// New compiles the built-in rules into an Evaluator that has no
// spec.healthRules yet.
func New(opts ...Option) (*Evaluator, error) {
	o := newOptions(opts)
	builtin, err := compileBuiltins(o)
	if err != nil {
		return nil, err
	}
	e := &Evaluator{opts: o, builtin: builtin}
	e.user.Store(&map[schema.GroupKind]userRules{})
	return e, nil
}

// SetRules sets a kind's spec.healthRules, as its FederatedTypeConfig says:
// empty rules remove them (the built-in rules, if any, apply alone). Rules
// equal to those set before are not compiled again. Rules that do not
// compile replace the kind's earlier rules all the same, and make every
// object of the kind Unknown (HealthReasonInvalidRules) until rules that
// compile are set: the returned error, which names each bad rule, is for
// the FederatedTypeConfig's condition.
func (e *Evaluator) SetRules(gk schema.GroupKind, rules []corev1beta1.HealthRule) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	current := *e.user.Load()
	if old, ok := current[gk]; ok && slices.Equal(old.source, rules) {
		return old.err
	}
	if len(rules) == 0 {
		if _, ok := current[gk]; !ok {
			return nil
		}
		next := maps.Clone(current)
		delete(next, gk)
		e.user.Store(&next)
		return nil
	}
	compiled, err := compile(rules, e.opts, healthRulesName)
	next := maps.Clone(current)
	next[gk] = userRules{source: slices.Clone(rules), rules: compiled, err: err}
	e.user.Store(&next)
	return err
}

// HasSpecRules tells whether the kind has spec.healthRules, which may read
// any field of an object; the built-in rules read only its status, metadata
// and the spec fields SpecFields names.
func (e *Evaluator) HasSpecRules(gk schema.GroupKind) bool {
	_, ok := (*e.user.Load())[gk]
	return ok
}

// Evaluate computes the health of a member object from its apiVersion and
// kind's rules.
func (e *Evaluator) Evaluate(obj *unstructured.Unstructured) Result {
	return e.EvaluateKind(obj.GroupVersionKind().GroupKind(), obj.Object)
}

// EvaluateKind computes the health of object, a member object of kind gk:
// an object being deleted is Progressing; otherwise the first of the
// kind's spec.healthRules, then of its built-in rules, that holds gives the
// health. If the kind has rules but none holds, the object is Unknown; if
// it has none at all, it is Healthy, as kstatus judges a kind without
// status.
func (e *Evaluator) EvaluateKind(gk schema.GroupKind, object map[string]any) Result {
	if res, ok := terminating(object); ok {
		return res
	}
	user, hasUser := (*e.user.Load())[gk]
	builtin := e.builtin[gk]
	if !hasUser && builtin == nil {
		return noRules
	}
	if hasUser {
		if user.err != nil {
			return Result{
				Health:  corev1beta1.HealthUnknown,
				Reason:  corev1beta1.HealthReasonInvalidRules,
				Message: truncate("the kind's healthRules do not compile: " + user.err.Error()),
			}
		}
		if res, ok := user.rules.match(object); ok {
			return res
		}
	}
	if builtin != nil {
		if res, ok := builtin.match(object); ok {
			return res
		}
	}
	return noRuleMatched
}
