// Package v1beta1 holds the federation's control-plane API, group
// core.kubefed.io: the member clusters (FederatedCluster) and the kinds that
// may be federated (FederatedTypeConfig). The group and shapes follow KubeFed
// so that KubeFed users' manifests keep working.
//
// +kubebuilder:object:generate=true
// +groupName=core.kubefed.io
package v1beta1
