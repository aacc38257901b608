// Package kyverno tests the Kyverno policies of deploy/kyverno: offline,
// with the real kyverno CLI (kyverno test, kyverno apply) on sample
// ClusterPropagatedVersions, and live, with Kyverno's admission, background
// and reports controllers healing drift on a local federation whose
// Fedwarden only reports it (remediation Alert).
package kyverno
