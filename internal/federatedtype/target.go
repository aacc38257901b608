package federatedtype

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Target is a kind as the host serves it: the kind written to member
// clusters.
type Target struct {
	// Group is the API group; empty for the core group.
	Group string
	// Version is the version propagated, for example v1.
	Version string
	// Kind, for example Deployment.
	Kind string
	// Plural is the resource name, for example deployments.
	Plural string
	// Namespaced tells whether objects of the kind live in a namespace.
	Namespaced bool
}

// Resource returns the target's resource as kubectl writes it, and as
// FederatedTypeConfigs are named: deployments.apps, configmaps.
func (t Target) Resource() string {
	if t.Group == "" {
		return t.Plural
	}
	return t.Plural + "." + t.Group
}

// GroupVersionKind returns the target's group, version and kind.
func (t Target) GroupVersionKind() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind}
}

// IsNamespace tells whether the target is the core Namespace kind, whose
// Federated<Kind> lives in the namespace it federates.
func (t Target) IsNamespace() bool {
	return t.Group == "" && t.Kind == "Namespace"
}

// Type is a target kind with the group and version of its Federated<Kind>.
type Type struct {
	Target Target
	// FederatedGroup is the group of the Federated<Kind>; empty means
	// types.kubefed.io.
	FederatedGroup string
	// FederatedVersion is its version; empty means v1beta1.
	FederatedVersion string
}

// FederatedGroupVersion returns the group and version of the
// Federated<Kind>, defaults applied.
func (t Type) FederatedGroupVersion() schema.GroupVersion {
	gv := typesv1beta1.GroupVersion
	if t.FederatedGroup != "" {
		gv.Group = t.FederatedGroup
	}
	if t.FederatedVersion != "" {
		gv.Version = t.FederatedVersion
	}
	return gv
}

// FederatedKind returns Federated<Kind>.
func (t Type) FederatedKind() string { return "Federated" + t.Target.Kind }

// FederatedPlural returns federated<plural>.
func (t Type) FederatedPlural() string { return "federated" + t.Target.Plural }

// FederatedScope returns the scope of the Federated<Kind>: the target's,
// except for Namespaces, whose FederatedNamespace lives in the namespace
// it federates.
func (t Type) FederatedScope() corev1beta1.ResourceScope {
	if t.Target.Namespaced || t.Target.IsNamespace() {
		return corev1beta1.NamespaceScoped
	}
	return corev1beta1.ClusterScoped
}

// CRDName returns the name of the Federated<Kind>'s CRD:
// federated<plural>.<federated group>.
func (t Type) CRDName() string {
	return t.FederatedPlural() + "." + t.FederatedGroupVersion().Group
}

// FederatedGroupVersionKind returns the group, version and kind of the
// Federated<Kind>.
func (t Type) FederatedGroupVersionKind() schema.GroupVersionKind {
	return t.FederatedGroupVersion().WithKind(t.FederatedKind())
}

// scope returns the scope of the target.
func (t Target) scope() corev1beta1.ResourceScope {
	if t.Namespaced {
		return corev1beta1.NamespaceScoped
	}
	return corev1beta1.ClusterScoped
}

// lower returns s in lower case, as kinds are matched and singular names made.
func lower(s string) string { return strings.ToLower(s) }
