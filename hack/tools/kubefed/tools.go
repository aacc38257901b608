//go:build tools

// Package tools pins KubeFed v0.10.0, which bench/bulk compares Fedwarden
// with: its controller manager and its CLI.
package tools

import (
	_ "sigs.k8s.io/kubefed/cmd/controller-manager"
	_ "sigs.k8s.io/kubefed/cmd/kubefedctl"
)
