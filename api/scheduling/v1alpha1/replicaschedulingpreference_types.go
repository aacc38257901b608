package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaSchedulingPreferenceSpec divides TotalReplicas of the federated
// workload of the same name and namespace between clusters.
type ReplicaSchedulingPreferenceSpec struct {
	// TargetKind is the kind of the federated workload, for example
	// FederatedDeployment.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^Federated[A-Z][A-Za-z0-9]*$`
	TargetKind string `json:"targetKind"`

	// TotalReplicas to divide between the clusters.
	// +kubebuilder:validation:Minimum=0
	TotalReplicas int32 `json:"totalReplicas"`

	// Clusters maps a cluster name, or "*" for every cluster not named,
	// to its preferences. Without it every cluster weighs the same.
	// +kubebuilder:validation:MaxProperties=1000
	// +kubebuilder:validation:XValidation:rule="self.all(k, k == '*' || (size(k) <= 63 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')))",message="spec.clusters keys must be \"*\" or cluster names (DNS-1123 labels)"
	// +optional
	Clusters map[string]ClusterPreferences `json:"clusters,omitempty"`

	// Rebalance allows moving replicas already running in a cluster to
	// reach the preferred division.
	// +optional
	Rebalance bool `json:"rebalance,omitempty"`

	// IntersectWithClusterSelector limits the division to the clusters
	// the workload's placement selects.
	// +optional
	IntersectWithClusterSelector bool `json:"intersectWithClusterSelector,omitempty"`
}

// ClusterPreferences are one cluster's share of the replicas.
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || self.maxReplicas >= (has(self.minReplicas) ? self.minReplicas : 0)",message="maxReplicas must not be less than minReplicas"
type ClusterPreferences struct {
	// MinReplicas the cluster gets before weights are considered.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas int64 `json:"minReplicas,omitempty"`

	// MaxReplicas the cluster may get; unset means no limit.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int64 `json:"maxReplicas,omitempty"`

	// Weight is the cluster's relative share of the remaining replicas.
	// +kubebuilder:validation:Minimum=0
	// +optional
	Weight int64 `json:"weight,omitempty"`
}

// ReplicaSchedulingPreferenceStatus is what the scheduler decided.
type ReplicaSchedulingPreferenceStatus struct {
	// Conditions: Scheduled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition type and reasons of a ReplicaSchedulingPreference.
const (
	// RSPScheduled is True when the preference divided the replicas of its
	// workload; the message gives each cluster's share.
	RSPScheduled = "Scheduled"

	// ReasonDivided: the replicas are divided as the message says.
	ReasonDivided = "Divided"
	// ReasonTargetNotFound: there is no federated workload of targetKind
	// with the preference's name in its namespace.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonNotDivided: the workload is not scheduled (see its Scheduled
	// condition), or some replicas fit in no cluster.
	ReasonNotDivided = "NotDivided"
)

// ReplicaSchedulingPreference divides a federated workload's replicas
// between member clusters.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rsp,categories=fedwarden
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.targetKind`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.totalReplicas`
// +kubebuilder:printcolumn:name="Rebalance",type=boolean,JSONPath=`.spec.rebalance`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ReplicaSchedulingPreference struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ReplicaSchedulingPreferenceSpec   `json:"spec"`
	Status ReplicaSchedulingPreferenceStatus `json:"status,omitempty"`
}

// ReplicaSchedulingPreferenceList is a list of ReplicaSchedulingPreference.
//
// +kubebuilder:object:root=true
type ReplicaSchedulingPreferenceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ReplicaSchedulingPreference `json:"items"`
}
