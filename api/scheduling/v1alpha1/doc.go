// Package v1alpha1 holds the federation's scheduling policies, group
// scheduling.kubefed.io, in KubeFed's shape: ReplicaSchedulingPreference
// divides a federated workload's replicas between member clusters.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.kubefed.io
package v1alpha1
