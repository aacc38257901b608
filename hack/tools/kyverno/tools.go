//go:build tools

// Package tools pins the Kyverno commands Fedwarden's tests run: the CLI,
// the admission controller, the background controller and the reports
// controller.
package tools

import (
	_ "github.com/kyverno/kyverno/cmd/background-controller"
	_ "github.com/kyverno/kyverno/cmd/cli/kubectl-kyverno"
	_ "github.com/kyverno/kyverno/cmd/kyverno"
	_ "github.com/kyverno/kyverno/cmd/reports-controller"
)
