//go:build tools

// Package tools records the Kubernetes commands so that go mod tidy keeps
// its dependencies.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
