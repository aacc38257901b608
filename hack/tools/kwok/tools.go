//go:build tools

// Package tools pins KWOK's controller, which tests run beside a member's
// kube-apiserver to give it simulated Nodes whose Pods become Ready.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
