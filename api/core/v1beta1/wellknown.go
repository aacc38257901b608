package v1beta1

// DefaultFederationNamespace is the control-plane namespace: on the host it
// holds the members' credential Secrets, on a member the identity the host
// writes with.
const DefaultFederationNamespace = "kube-federation-system"

// Keys of a member's credential Secret on the host (the Secret that
// spec.secretRef names).
const (
	// SecretTokenKey holds the bearer token of the member's ServiceAccount.
	SecretTokenKey = "token"
	// SecretCAKey holds the member's CA bundle; spec.caBundle, when set, wins.
	SecretCAKey = "ca.crt"
)

// Labels Fedwarden sets on FederatedClusters and on the objects that join
// creates.
const (
	// LabelCluster names the member cluster an object belongs to.
	LabelCluster = "fedwarden.io/cluster"
	// LabelRegion mirrors spec.region, so selectors can match it.
	LabelRegion = "topology.kubernetes.io/region"
	// LabelZone mirrors spec.zones when the cluster is in exactly one zone.
	LabelZone = "topology.kubernetes.io/zone"
)

// AnnotationAgentKubernetesVersion on a Pull cluster's agent Lease: the
// Kubernetes version of the agent's cluster, which the health controller
// copies into the FederatedCluster's status.kubernetesVersion.
const AnnotationAgentKubernetesVersion = "fedwarden.io/kubernetes-version"
