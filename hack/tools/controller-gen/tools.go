//go:build tools

// Package tools records controller-gen so that go mod tidy keeps its dependencies.
package tools

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
