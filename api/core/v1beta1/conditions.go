package v1beta1

// Condition types of a FederatedCluster.
const (
	// ClusterReady is True when the member's API server answers its
	// readiness probe (or, for Pull clusters, its agent renews its Lease).
	ClusterReady = "Ready"
	// ClusterOffline is True when the member cannot be reached.
	ClusterOffline = "Offline"
	// ClusterConfigMalformed is True when the FederatedCluster or its Secret
	// cannot be turned into a client (bad CA bundle, missing token...).
	ClusterConfigMalformed = "ConfigMalformed"
)

// Condition reasons of a FederatedCluster.
const (
	// ReasonClusterReady: the readiness probe succeeded.
	ReasonClusterReady = "ClusterReady"
	// ReasonClusterNotReady: the API server answered, but not ready.
	ReasonClusterNotReady = "ClusterNotReady"
	// ReasonClusterUnreachable: the API server did not answer in time, or
	// refused the connection, as many probes in a row as the failure
	// threshold.
	ReasonClusterUnreachable = "ClusterUnreachable"
	// ReasonCertificateUntrusted: the API server answered with a certificate
	// that the CA bundle does not verify.
	ReasonCertificateUntrusted = "CertificateUntrusted"
	// ReasonCredentialsRejected: the API server refused the token (401), for
	// example because its ServiceAccount or token Secret was deleted.
	ReasonCredentialsRejected = "CredentialsRejected"
	// ReasonClusterReachable: the API server answered.
	ReasonClusterReachable = "ClusterReachable"
	// ReasonConfigValid: the connection settings could be built into a client.
	ReasonConfigValid = "ConfigValid"
	// ReasonSecretNotFound: spec.secretRef names no Secret.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretMalformed: the Secret lacks a token or holds a bad one.
	ReasonSecretMalformed = "SecretMalformed"
	// ReasonCABundleMalformed: spec.caBundle holds no PEM certificate.
	ReasonCABundleMalformed = "CABundleMalformed"
	// ReasonCredentialsNotBound: the Secret that spec.secretRef names is not
	// bound to this cluster, its spec.apiEndpoint and its CA bundle (see
	// AnnotationCredentialsCluster), so its token is not sent: editing a
	// FederatedCluster cannot redirect a token elsewhere.
	ReasonCredentialsNotBound = "CredentialsNotBound"
	// ReasonAgentNotSeen: no agent of a Pull cluster has renewed its Lease.
	ReasonAgentNotSeen = "AgentNotSeen"
	// ReasonAgentLeaseExpired: a Pull cluster's agent stopped renewing its Lease.
	ReasonAgentLeaseExpired = "AgentLeaseExpired"
	// ReasonAgentRenewing: a Pull cluster's agent renews its Lease in time.
	ReasonAgentRenewing = "AgentRenewing"
	// ReasonDuplicateCluster: the API server is a cluster joined before under
	// another FederatedCluster (the same status.clusterID, its kube-system
	// namespace's UID). Nothing is written to it through this one, and
	// nothing it holds is deleted through this one either.
	ReasonDuplicateCluster = "DuplicateCluster"
	// ReasonProbing: the first probe has not finished yet.
	ReasonProbing = "Probing"
	// ReasonNotProbed: the cluster is not probed, because its connection
	// settings are malformed.
	ReasonNotProbed = "NotProbed"
)

// Condition types and reasons of a FederatedTypeConfig.
const (
	// TypeConfigEstablished is True when the target and federated types
	// are served and the propagation controller for them runs.
	TypeConfigEstablished = "Established"

	// TypeConfigHealthRules is True when spec.healthRules compile, False
	// (its message naming each bad rule) when they do not: the kind's
	// copies are then judged Unknown. Absent without spec.healthRules.
	TypeConfigHealthRules = "HealthRulesValid"
	// ReasonHealthRulesCompiled: every rule of spec.healthRules compiled.
	ReasonHealthRulesCompiled = "HealthRulesCompiled"
	// ReasonHealthRulesInvalid: a rule does not compile, or does not give
	// a bool (when) or a string (message).
	ReasonHealthRulesInvalid = "HealthRulesInvalid"

	// ReasonControllerRunning: the propagation controller runs.
	ReasonControllerRunning = "ControllerRunning"
	// ReasonPropagationDisabled: spec.propagation is Disabled.
	ReasonPropagationDisabled = "PropagationDisabled"
	// ReasonTypeNotServed: the target or federated type is not served by the host.
	ReasonTypeNotServed = "TypeNotServed"
	// ReasonControllerStarting: the propagation controller was started and
	// waits for its first list of the federated resources; a type stays
	// here, NotRunning, while that list fails (the message says why, for
	// example the controller-manager may not list the kind).
	ReasonControllerStarting = "ControllerStarting"
	// ReasonControllerFailed: the propagation controller could not be
	// started, cannot list the federated resources, or stopped with an
	// error; the message has the error. It is started again.
	ReasonControllerFailed = "ControllerFailed"
)
