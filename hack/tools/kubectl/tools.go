//go:build tools

// Package tools records kubectl so that go mod tidy keeps its dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kubectl"
)
