// Package kyvernotest runs real Kyverno v1.19 controllers — admission,
// background and reports — out of cluster against a localfed host, beside
// Fedwarden's controller-manager, for the tests and benchmarks of the
// Kyverno loop (deploy/kyverno): StartBed starts the whole bed, Start only
// Kyverno, Apply installs manifests such as the policies.
//
// Kyverno runs as it does in a cluster, with the namespace, ConfigMaps,
// ServiceAccount and environment its Deployments get from the Helm chart,
// except that it reaches the API server through a kubeconfig and registers
// its webhooks with --serverIP 127.0.0.1, so its webhook server listens on
// 127.0.0.1:443: one admission controller per machine at a time, and the
// test must run as root or with CAP_NET_BIND_SERVICE in its ambient
// capabilities (which the controller inherits) to bind a port below 1024.
// Start and StartBed check that they can bind it before they start anything,
// and fail saying so.
package kyvernotest
