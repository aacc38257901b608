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
