package copyhealth

import (
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/cel/environment"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// DefaultCostLimit is the CEL cost one expression may spend on one object
// before it is stopped and its rule fails: a hundredth of the
// per-expression limit of Kubernetes' CRD validation rules (1,000,000),
// because health is computed on every member informer event for every
// copy. Cost counts about one unit per field read, comparison or
// comprehension step: the built-in rules spend under 100 on a real object,
// a rule that walks a list of a thousand entries once a few thousand; a
// runaway rule is stopped after about 2 ms of one core.
const DefaultCostLimit uint64 = 10_000

// The limits that the FederatedTypeConfig CRD sets on spec.healthRules,
// enforced here too for rules that come from anywhere else.
const (
	maxRules            = 32
	maxExpressionLength = 1024
)

// maxMessageLength bounds a message an expression gives, in bytes.
const maxMessageLength = 1024

// ObjectVariable is the name of the member object in a rule's expressions.
const ObjectVariable = "object"

// Result is the health of one member object.
type Result struct {
	Health corev1beta1.HealthState
	// Reason is a CamelCase word: the matching rule's reason, or one of the
	// HealthReason constants of api/core/v1beta1.
	Reason string
	// Message is for people; it may be empty.
	Message string
}

// Option configures Compile and New.
type Option func(*options)

type options struct {
	costLimit uint64
}

// WithCostLimit sets the CEL cost each expression may spend on one object
// (DefaultCostLimit if not set).
func WithCostLimit(limit uint64) Option {
	return func(o *options) { o.costLimit = limit }
}

func newOptions(opts []Option) options {
	o := options{costLimit: DefaultCostLimit}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// Rules are one kind's health rules, compiled. They are safe for
// concurrent use.
type Rules struct {
	rules []rule
}

type rule struct {
	// name says where the rule comes from in errors and messages, for
	// example healthRules[2] or "built-in rule ReplicaFailure of
	// Deployment.apps".
	name    string
	health  corev1beta1.HealthState
	reason  string
	when    cel.Program
	message cel.Program // nil without a message
}

// env is the CEL environment of health rules: Kubernetes' base environment
// (the libraries and settings of CRD validation rules, at the most
// permissive level that Kubernetes uses for expressions already stored)
// with the member object as the variable `object`, untyped as in
// ValidatingAdmissionPolicy without a schema.
var env = sync.OnceValues(func() (*cel.Env, error) {
	set, err := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()).Extend(environment.VersionedOptions{
		IntroducedVersion: version.MajorMinor(1, 0),
		EnvOptions:        []cel.EnvOption{cel.Variable(ObjectVariable, cel.DynType)},
	})
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment of health rules: %w", err)
	}
	return set.StoredExpressionsEnv(), nil
})

// Compile compiles a kind's spec.healthRules. Its error names each rule
// that does not compile (healthRules[i].when or .message) with CEL's own
// message; a when that cannot give a bool, or a message that cannot give a
// string, does not compile.
func Compile(rules []corev1beta1.HealthRule, opts ...Option) (*Rules, error) {
	return compile(rules, newOptions(opts), healthRulesName)
}

func healthRulesName(i int) string { return fmt.Sprintf("healthRules[%d]", i) }

func compile(source []corev1beta1.HealthRule, o options, name func(int) string) (*Rules, error) {
	if len(source) > maxRules {
		return nil, fmt.Errorf("healthRules: %d rules, more than the %d allowed", len(source), maxRules)
	}
	e, err := env()
	if err != nil {
		return nil, err
	}
	out := &Rules{rules: make([]rule, 0, len(source))}
	var errs []error
	for i, src := range source {
		r, err := compileRule(e, src, name(i), o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.rules = append(out.rules, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func compileRule(e *cel.Env, src corev1beta1.HealthRule, name string, o options) (rule, error) {
	r := rule{name: name, health: src.Health, reason: src.Reason}
	switch src.Health {
	case corev1beta1.HealthHealthy, corev1beta1.HealthProgressing, corev1beta1.HealthDegraded:
	default:
		return r, fmt.Errorf("%s.health: %q is not Healthy, Progressing or Degraded", name, src.Health)
	}
	if r.reason == "" {
		r.reason = string(src.Health)
	}
	var err error
	if r.when, err = compileExpression(e, src.When, cel.BoolType, o); err != nil {
		return r, fmt.Errorf("%s.when: %w", name, err)
	}
	if src.Message != "" {
		if r.message, err = compileExpression(e, src.Message, cel.StringType, o); err != nil {
			return r, fmt.Errorf("%s.message: %w", name, err)
		}
	}
	return r, nil
}

// compileExpression compiles expr, which must give want or a value whose
// type is only known when it runs (a field of the object).
func compileExpression(e *cel.Env, expr string, want *cel.Type, o options) (cel.Program, error) {
	if expr == "" {
		return nil, errors.New("empty expression")
	}
	if len(expr) > maxExpressionLength {
		return nil, fmt.Errorf("%d bytes long, more than the %d allowed", len(expr), maxExpressionLength)
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if out := ast.OutputType(); !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("gives %s, not %s", out, want)
	}
	return e.Program(ast, cel.CostLimit(o.costLimit))
}

// Evaluate computes the health of object, a member object as its informer
// holds it, by these rules alone: an object being deleted is Progressing,
// the first rule that holds gives the health, and no rule holding gives
// Unknown. Nil Rules (a kind with no rules) make every object that is not
// being deleted Healthy.
func (r *Rules) Evaluate(object map[string]any) Result {
	if res, ok := terminating(object); ok {
		return res
	}
	if r == nil {
		return noRules
	}
	if res, ok := r.match(object); ok {
		return res
	}
	return noRuleMatched
}

var (
	noRules = Result{
		Health:  corev1beta1.HealthHealthy,
		Reason:  corev1beta1.HealthReasonNoRules,
		Message: "the kind has no health rules: an object that exists is Healthy",
	}
	noRuleMatched = Result{
		Health:  corev1beta1.HealthUnknown,
		Reason:  corev1beta1.HealthReasonNoRuleMatched,
		Message: "no health rule of the kind holds for this object",
	}
)

// match returns the result of the first rule that holds, or of the first
// that fails (Unknown: a later rule could say Healthy only because an
// earlier, failing, one did not get to say Degraded); false if none holds.
func (r *Rules) match(object map[string]any) (Result, bool) {
	act := &activation{object: object}
	for i := range r.rules {
		ru := &r.rules[i]
		holds, err := ru.holds(act)
		if err != nil {
			return Result{
				Health:  corev1beta1.HealthUnknown,
				Reason:  corev1beta1.HealthReasonRuleFailed,
				Message: truncate(fmt.Sprintf("%s.when: %v", ru.name, err)),
			}, true
		}
		if holds {
			return Result{Health: ru.health, Reason: ru.reason, Message: ru.messageFor(act)}, true
		}
	}
	return Result{}, false
}

func (ru *rule) holds(act interpreter.Activation) (bool, error) {
	out, _, err := ru.when.Eval(act)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("gave %s, not bool", out.Type().TypeName())
	}
	return bool(b), nil
}

// messageFor evaluates the rule's message; a message that fails says so
// and leaves the health as it is.
func (ru *rule) messageFor(act interpreter.Activation) string {
	if ru.message == nil {
		return ""
	}
	out, _, err := ru.message.Eval(act)
	if err != nil {
		return truncate(fmt.Sprintf("%s.message: %v", ru.name, err))
	}
	s, ok := out.(types.String)
	if !ok {
		return truncate(fmt.Sprintf("%s.message: gave %s, not string", ru.name, out.Type().TypeName()))
	}
	return truncate(string(s))
}

// terminating: an object with a deletionTimestamp is Progressing, whatever
// its rules say, as in kstatus and Argo CD.
func terminating(object map[string]any) (Result, bool) {
	meta, _ := object["metadata"].(map[string]any)
	ts, ok := meta["deletionTimestamp"]
	if !ok || ts == nil {
		return Result{}, false
	}
	msg := "the object is being deleted"
	if s, ok := ts.(string); ok && s != "" {
		msg = truncate("the object is being deleted since " + s)
	}
	return Result{Health: corev1beta1.HealthProgressing, Reason: corev1beta1.HealthReasonTerminating, Message: msg}, true
}

func truncate(s string) string {
	if len(s) <= maxMessageLength {
		return s
	}
	cut := maxMessageLength - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// activation binds the member object to the variable `object`, without the
// map that cel.Program.Eval would otherwise build on each call.
type activation struct {
	object map[string]any
}

var _ interpreter.Activation = (*activation)(nil)

func (a *activation) ResolveName(name string) (any, bool) {
	if name == ObjectVariable {
		return a.object, true
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }
