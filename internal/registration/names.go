package registration

// Label values every object built here carries.
const (
	// LabelManagedBy is the recommended label naming the tool that manages
	// an object.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedBy is the value of LabelManagedBy.
	ManagedBy = "fedwarden"
)

// ServiceAccountName is the name of the ServiceAccount the host writes to
// the member cluster as.
func ServiceAccountName(cluster string) string { return "fedwarden-" + cluster }

// TokenSecretName is the name of the member Secret holding the
// ServiceAccount's long-lived token.
func TokenSecretName(cluster string) string { return "fedwarden-" + cluster + "-token" }

// ClusterRoleName is the name of the member ClusterRole, and of its
// ClusterRoleBinding.
func ClusterRoleName(cluster string) string { return "fedwarden:member:" + cluster }

// CredentialsSecretName is the name of the host Secret holding the member's
// token and CA.
func CredentialsSecretName(cluster string) string { return "fedwarden-" + cluster + "-credentials" }

// Names of a Pull cluster's agent. On the host, the agent of cluster NAME is
// the ServiceAccount fedwarden-agent-NAME of the control-plane namespace,
// renews the Lease of the same name there, and is bound to the shared
// ClusterRole AgentClusterRoleName. In the member, it runs as the
// ServiceAccount AgentMemberServiceAccountName of the control-plane namespace.
const (
	// AgentPrefix starts the name of every agent's ServiceAccount and Lease
	// on the host; the admission policy that isolates agents reads the
	// cluster name after it.
	AgentPrefix = "fedwarden-agent-"
	// AgentClusterRoleName is the host ClusterRole every agent is bound to:
	// reading what is placed on its cluster, and writing CPV status.
	AgentClusterRoleName = "fedwarden:agent"
	// AgentMemberServiceAccountName is the agent's ServiceAccount in its
	// member, and the name of its ClusterRole and binding there.
	AgentMemberServiceAccountName = "fedwarden-agent"
	// AgentHostKubeconfigSecretName is the member Secret holding the agent's
	// kubeconfig of the host, under AgentHostKubeconfigKey.
	AgentHostKubeconfigSecretName = "fedwarden-agent-host"
	// AgentHostKubeconfigKey is that Secret's key.
	AgentHostKubeconfigKey = "kubeconfig"
)

// AgentServiceAccountName is the host ServiceAccount of cluster's agent.
func AgentServiceAccountName(cluster string) string { return AgentPrefix + cluster }

// AgentTokenSecretName is the host Secret holding the long-lived token of
// cluster's agent.
func AgentTokenSecretName(cluster string) string { return AgentPrefix + cluster + "-token" }

// AgentLeaseName is the host Lease cluster's agent renews; the health
// controller derives the cluster's Ready condition from it.
func AgentLeaseName(cluster string) string { return AgentPrefix + cluster }

// AgentBindingName names the host ClusterRoleBinding, Role and RoleBinding of
// cluster's agent.
func AgentBindingName(cluster string) string { return "fedwarden:agent:" + cluster }

// AgentOwnClusterName is the name of the ClusterRole, and of its binding,
// that lets cluster's agent read its own FederatedCluster.
func AgentOwnClusterName(cluster string) string { return "fedwarden:agent:" + cluster + ":own-cluster" }

// AgentFieldManager is the field manager of cluster's agent's writes to
// ClusterPropagatedVersion status: one per cluster, so that agents never
// take each other's entries.
func AgentFieldManager(cluster string) string { return AgentPrefix + cluster }

// More names of a Pull cluster's agent.
const (
	// AgentDeploymentName is the agent's Deployment in its member.
	AgentDeploymentName = "fedwarden-agent"
	// AgentHostKubeconfigDir is where the agent's container mounts the
	// Secret AgentHostKubeconfigSecretName; the kubeconfig is the file
	// AgentHostKubeconfigKey there.
	AgentHostKubeconfigDir = "/etc/fedwarden/host"
	// AgentIsolationPolicyName names the ValidatingAdmissionPolicy that keeps
	// each agent to its own entries of ClusterPropagatedVersion status, and
	// its binding.
	AgentIsolationPolicyName = "fedwarden-agent-isolation"
	// AgentImageRepository is the repository of the agent's default image,
	// tagged with the CLI's version.
	AgentImageRepository = "ghcr.io/fedwarden/fedwarden"
	// AgentMetricsPort and AgentProbePort are the agent's metrics and
	// health-probe (/healthz, /readyz) ports.
	AgentMetricsPort = 8080
	AgentProbePort   = 8081
)

// AgentHostKubeconfigPath is the agent's kubeconfig of the host, inside its
// container.
const AgentHostKubeconfigPath = AgentHostKubeconfigDir + "/" + AgentHostKubeconfigKey
