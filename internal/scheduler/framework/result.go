package framework

import "fmt"

// Code is a plugin's verdict.
type Code int

const (
	// Success: the cluster passes, or the step succeeded.
	Success Code = iota
	// Unschedulable: the cluster is ruled out, or no decision satisfies
	// the plugin; the reasons say why.
	Unschedulable
	// Error: the plugin could not decide, for example from bad input.
	Error
)

func (c Code) String() string {
	switch c {
	case Success:
		return "Success"
	case Unschedulable:
		return "Unschedulable"
	default:
		return "Error"
	}
}

// Result is a plugin's verdict with its reasons.
type Result struct {
	Code    Code
	Reasons []string
}

// OK is a successful Result.
func OK() Result { return Result{} }

// RuleOut returns an Unschedulable Result with one reason.
func RuleOut(format string, args ...any) Result {
	return Result{Code: Unschedulable, Reasons: []string{fmt.Sprintf(format, args...)}}
}

// Fail returns an Error Result with one reason.
func Fail(format string, args ...any) Result {
	return Result{Code: Error, Reasons: []string{fmt.Sprintf(format, args...)}}
}

// IsSuccess tells whether r lets the cluster or step through.
func (r Result) IsSuccess() bool { return r.Code == Success }
