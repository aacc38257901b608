// Package kyverno tests the Kyverno policies of deploy/kyverno: offline,
// with the real kyverno CLI (kyverno test, kyverno apply) on sample
// ClusterPropagatedVersions, and live, with Kyverno's admission, background
// and reports controllers healing drift on a local federation whose
// Fedwarden only reports it (remediation Alert).
//
// The live test binds 127.0.0.1:443 for Kyverno's webhooks: run it as root
// or with CAP_NET_BIND_SERVICE (see package kyvernotest), one at a time per
// machine; otherwise it fails at once, saying so.
package kyverno
