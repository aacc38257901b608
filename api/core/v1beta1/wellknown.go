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

// Annotations of a member's credential Secret on the host that bind its
// token to one cluster, one endpoint and one CA bundle. The controller sends
// the token only to the FederatedCluster they name, at the endpoint they
// name, verified with the CA bundle whose digest they hold: whoever may edit
// a FederatedCluster but not Secrets cannot redirect a token. `fedwarden
// join` writes them; a Secret without them is not used.
const (
	// AnnotationCredentialsCluster names the FederatedCluster the token is
	// for.
	AnnotationCredentialsCluster = "fedwarden.io/credentials-cluster"
	// AnnotationCredentialsEndpoint is the spec.apiEndpoint the token may be
	// sent to, exactly as the FederatedCluster spells it.
	AnnotationCredentialsEndpoint = "fedwarden.io/credentials-endpoint"
	// AnnotationCredentialsCA is the digest of the CA bundle the endpoint
	// must be verified with (spec.caBundle, else the Secret's ca.crt):
	// "sha256:" and the hex SHA-256 of its bytes, or CredentialsCASystemRoots
	// when there is none.
	AnnotationCredentialsCA = "fedwarden.io/credentials-ca"
	// CredentialsCASystemRoots is the value of AnnotationCredentialsCA for a
	// cluster verified with the system roots (no CA bundle).
	CredentialsCASystemRoots = "system-roots"
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

// AnnotationAgentClusterID on a Pull cluster's agent Lease: the UID of the
// agent's cluster's kube-system namespace, which the health controller
// copies into the FederatedCluster's status.clusterID.
const AnnotationAgentClusterID = "fedwarden.io/cluster-id"
