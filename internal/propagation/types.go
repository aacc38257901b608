package propagation

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Type is one enabled federated type: the Federated<Kind> on the host and
// the kind written to members.
type Type struct {
	// Name is the FederatedTypeConfig's name, for example deployments.apps.
	Name string
	// Federated is the kind of the federated resources on the host, and
	// FederatedResource its plural resource name.
	Federated         schema.GroupVersionKind
	FederatedResource string
	// Target is the kind written to members, and its resource.
	Target         schema.GroupVersionKind
	TargetResource schema.GroupVersionResource
	// TargetNamespaced tells whether member copies are namespaced.
	TargetNamespaced bool
	// FederatedNamespaced tells whether the federated resources are.
	FederatedNamespaced bool
	// CollectStatus copies each member's status onto the host.
	CollectStatus bool
}

// TypeFromConfig returns the Type a FederatedTypeConfig describes.
func TypeFromConfig(ftc *corev1beta1.FederatedTypeConfig) Type {
	t, f := ftc.Spec.TargetType, ftc.Spec.FederatedType
	return Type{
		Name:                ftc.Name,
		Federated:           schema.GroupVersionKind{Group: f.Group, Version: f.Version, Kind: f.Kind},
		FederatedResource:   f.PluralName,
		Target:              schema.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: t.Kind},
		TargetResource:      schema.GroupVersionResource{Group: t.Group, Version: t.Version, Resource: t.PluralName},
		TargetNamespaced:    t.Scope == corev1beta1.NamespaceScoped,
		FederatedNamespaced: f.Scope == corev1beta1.NamespaceScoped,
		CollectStatus:       ftc.Spec.StatusCollection != nil && *ftc.Spec.StatusCollection == corev1beta1.Enabled,
	}
}

// IsNamespace tells whether the type federates Namespaces: a
// FederatedNamespace lives in the namespace it federates.
func (t Type) IsNamespace() bool {
	return t.Target.Group == "" && t.Target.Kind == "Namespace"
}

// CPVName is the name of the ClusterPropagatedVersion of the federated
// resource called name: <lower-case target kind>-<name>.
func (t Type) CPVName(name string) string {
	return strings.ToLower(t.Target.Kind) + "-" + name
}

// holdsSecrets tells whether the copies are core Secrets.
func (t Type) holdsSecrets() bool {
	return t.Target.Group == "" && t.Target.Kind == "Secret"
}

// RefusedRollout returns why the controller refuses a resource of type t
// whose spec.rollout is r (see errWavesOfSecrets), or nil.
func (t Type) RefusedRollout(r *typesv1beta1.Rollout) error {
	if r != nil && r.Strategy == typesv1beta1.RolloutWaves && t.holdsSecrets() {
		return errWavesOfSecrets
	}
	return nil
}

// renderTarget is what render needs of the type: the kind of the member
// copies, and whether they are namespaced.
func (t Type) renderTarget() render.Target {
	return render.Target{Kind: t.Target, Namespaced: t.TargetNamespaced}
}

// Render is the render stage: the copy of fed, whose spec is spec, that
// cluster gets, with replicas the scheduler's there (nil when it does not
// divide them). The controller, its agents and plan call it.
func (t Type) Render(fed *unstructured.Unstructured, spec render.Spec, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	return render.For(t.renderTarget(), fed, spec, cluster, replicas)
}
