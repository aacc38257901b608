package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SyncMode says which side applies federated resources to a member cluster.
// +kubebuilder:validation:Enum=Push;Pull
type SyncMode string

const (
	// SyncModePush: the host's controller-manager writes to the member with
	// the credentials of spec.secretRef.
	SyncModePush SyncMode = "Push"
	// SyncModePull: an agent inside the member pulls from the host; the host
	// holds no credentials for the member.
	SyncModePull SyncMode = "Pull"
)

// LocalSecretReference names a Secret in the federation's control-plane
// namespace.
type LocalSecretReference struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// FederatedClusterSpec is how the control plane reaches a member cluster.
// +kubebuilder:validation:XValidation:rule="self.syncMode == 'Pull' || has(self.secretRef)",fieldPath=".secretRef",message="spec.secretRef is required when spec.syncMode is Push: the host needs credentials to write to the member"
type FederatedClusterSpec struct {
	// APIEndpoint is the member's API server URL; it must use https.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https' && size(url(self).getHostname()) > 0",message="spec.apiEndpoint must be an https:// URL with a host, for example https://10.0.0.1:6443"
	APIEndpoint string `json:"apiEndpoint"`

	// CABundle is the PEM bundle of the CAs that sign the member API
	// server's serving certificate. Empty means the host's system roots.
	// +optional
	CABundle []byte `json:"caBundle,omitempty"`

	// SecretRef names the Secret (in the control-plane namespace) holding the
	// member's credentials under the key "token". Required for Push.
	// +optional
	SecretRef *LocalSecretReference `json:"secretRef,omitempty"`

	// SyncMode is Push (the host writes to the member) or Pull (an agent in
	// the member pulls from the host).
	// +kubebuilder:default=Push
	// +optional
	SyncMode SyncMode `json:"syncMode,omitempty"`

	// Region the cluster runs in, used by placement and geographic spread.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	// +optional
	Region string `json:"region,omitempty"`

	// Zones the cluster spans.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	Zones []Zone `json:"zones,omitempty"`
}

// Zone is an availability zone name; it has the syntax of a label value.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
type Zone string

// FederatedClusterStatus is what the health controller observed.
type FederatedClusterStatus struct {
	// Conditions: Ready, Offline and ConfigMalformed.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// KubernetesVersion the member's API server reports (/version gitVersion).
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// ClusterID identifies the member cluster itself, whatever its endpoint:
	// the UID of its kube-system namespace, read by the probe (Push) or
	// published by the agent on its Lease (Pull). Two FederatedClusters with
	// the same ClusterID are one cluster: the one created later is not Ready
	// (reason DuplicateCluster) and nothing is written through it.
	// +optional
	ClusterID string `json:"clusterID,omitempty"`

	// ServedBy names who serves the cluster: the controller-manager
	// replica that probes it and writes to it (Push), or the agent that
	// holds its Lease (Pull).
	// +optional
	ServedBy string `json:"servedBy,omitempty"`
}

// FederatedCluster is a member cluster of the federation.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=fcl,categories=fedwarden
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.syncMode`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Served-By",type=string,JSONPath=`.status.servedBy`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: a cluster name must be a DNS-1123 label (at most 63 lower-case letters, digits or '-', starting and ending with a letter or digit)"
type FederatedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FederatedClusterSpec   `json:"spec"`
	Status FederatedClusterStatus `json:"status,omitempty"`
}

// FederatedClusterList is a list of FederatedCluster.
//
// +kubebuilder:object:root=true
type FederatedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedCluster `json:"items"`
}
