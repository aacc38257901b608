//go:build tools

// Package tools records staticcheck so that go mod tidy keeps its dependencies.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
