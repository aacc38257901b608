//go:build tools

// Package tools records the helm command so that go mod tidy keeps its
// dependencies.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
