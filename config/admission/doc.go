// Package admission holds the ValidatingAdmissionPolicies that Fedwarden
// ships with its CRDs (policies/, one file per policy with its binding), and
// embeds them so that every install path installs the same ones: localfed
// (and so `fedwarden up` and every test bed) right after the CRDs, and the
// Helm chart, whose copy `make generate` refreshes.
//
// The policies check, in CEL inside the API server, what CRD validation
// and RBAC cannot afford or cannot see: that the label keys and values of a
// placement's clusterSelector parse, that only the controller-manager (the
// subjects of the ClusterRoleBinding CPVSpecWriter) writes a
// ClusterPropagatedVersion's spec, that a FederatedNamespace is named after
// its own namespace, that a FederatedSecret is not rolled out in waves, and
// that the kubefed.io/resync annotation fits in the ClusterPropagatedVersion
// that records it.
package admission
