package federatedtype

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Scopes tells which federated kinds are cluster-scoped: their
// ClusterPropagatedVersions live in the control-plane namespace.
type Scopes map[schema.GroupKind]bool

// ClusterScoped returns the cluster-scoped federated kinds of ftcs.
func ClusterScoped(ftcs []corev1beta1.FederatedTypeConfig) Scopes {
	out := Scopes{}
	for _, ftc := range ftcs {
		f := ftc.Spec.FederatedType
		if f.Scope == corev1beta1.ClusterScoped {
			out[schema.GroupKind{Group: f.Group, Kind: f.Kind}] = true
		}
	}
	return out
}

// Has tells whether the federated resource a CPV spec names is of a
// cluster-scoped kind; without an apiVersion, any group of that kind will
// do.
func (s Scopes) Has(spec typesv1beta1.ClusterPropagatedVersionSpec) bool {
	if spec.TemplateAPIVersion != "" {
		return s[schema.FromAPIVersionAndKind(spec.TemplateAPIVersion, spec.TemplateKind).GroupKind()]
	}
	for gk := range s {
		if gk.Kind == spec.TemplateKind {
			return true
		}
	}
	return false
}
