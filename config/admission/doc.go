// Package admission holds the ValidatingAdmissionPolicies that Fedwarden
// ships with its CRDs (policies/, one file per policy with its binding), and
// embeds them so that every install path installs the same ones: localfed
// (and so `fedwarden up` and every test bed) right after the CRDs, and the
// Helm chart, whose copy `make generate` refreshes.
//
// The policies check, in CEL inside the API server, what CRD validation
// cannot afford or cannot see: that the label keys and values of a
// placement's clusterSelector parse, that a FederatedNamespace is named after
// its own namespace, and that the kubefed.io/resync annotation fits in the
// ClusterPropagatedVersion that records it.
package admission
