// Package v1beta1 holds the federated kinds, group types.kubefed.io: each
// Federated<Kind> (template, placement, per-cluster overrides) and the
// ClusterPropagatedVersion that records, per member cluster, which template
// and override version is really there. Shapes follow KubeFed and the
// specification (section 2.3) so that their manifests apply unchanged.
//
// +kubebuilder:object:generate=true
// +groupName=types.kubefed.io
package v1beta1
