//go:build tools

// Package tools records the kube-apiserver command so that go mod tidy keeps
// its dependencies.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
