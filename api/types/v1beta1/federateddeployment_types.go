package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeploymentTemplate is the Deployment written to member clusters, before
// overrides. Its name and namespace are those of the FederatedDeployment.
type DeploymentTemplate struct {
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec appsv1.DeploymentSpec `json:"spec,omitempty"`
}

// FederatedDeploymentSpec is a Deployment template with its placement and
// per-cluster overrides.
type FederatedDeploymentSpec struct {
	// Template of the Deployment written to member clusters.
	// +optional
	Template DeploymentTemplate `json:"template,omitempty"`

	// Placement selects the member clusters.
	// +optional
	Placement Placement `json:"placement,omitempty"`

	// Overrides change the template per cluster, each cluster once.
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Overrides []ClusterOverride `json:"overrides,omitempty"`

	// RetainReplicas keeps each member's spec.replicas once the Deployment
	// exists there (for a HorizontalPodAutoscaler in the member).
	// +optional
	RetainReplicas bool `json:"retainReplicas,omitempty"`

	// DriftPolicy says what happens when a member's copy is changed or
	// deleted by someone else.
	// +optional
	DriftPolicy *DriftPolicy `json:"driftPolicy,omitempty"`

	// Rollout says how a new revision of the template and overrides
	// reaches the placed clusters: all at once (the default) or in waves.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`

	// PropagateDependencies sends, with the workload, the ConfigMaps,
	// Secrets, ServiceAccount (not default) and PersistentVolumeClaims of
	// its namespace that its pod template names, each as a federated
	// resource of its own placed on the workload's clusters
	// (docs/dependencies.md).
	// +optional
	PropagateDependencies bool `json:"propagateDependencies,omitempty"`
}

// FederatedDeployment places a Deployment on member clusters.
//
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.template) || !has(self.spec.template.metadata) || !has(self.spec.template.metadata.name) || self.spec.template.metadata.name == self.metadata.name",fieldPath=".spec.template.metadata.name",message="spec.template.metadata.name must be empty or the FederatedDeployment's name: member objects take its name"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=fdeploy,categories=fedwarden;federated
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.clusterCount`
// +kubebuilder:printcolumn:name="Propagated",type=string,JSONPath=`.status.conditions[?(@.type=="Propagated")].status`
// +kubebuilder:printcolumn:name="Drifted",type=integer,JSONPath=`.status.driftedClusters`
// +kubebuilder:printcolumn:name="Healthy",type=string,JSONPath=`.status.healthy`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FederatedDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FederatedDeploymentSpec `json:"spec,omitempty"`
	Status FederatedStatus         `json:"status,omitempty"`
}

// FederatedDeploymentList is a list of FederatedDeployment.
//
// +kubebuilder:object:root=true
type FederatedDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FederatedDeployment `json:"items"`
}
