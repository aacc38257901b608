package federatedtype

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// statusCollected are the targets, as resource.group, whose member status
// is collected onto the host.
var statusCollected = map[string]bool{"deployments.apps": true}

// NewTypeConfig returns the FederatedTypeConfig that enables t, named as
// KubeFed names it: <plural>.<group>, or <plural> for the core group.
// Propagation is Enabled; status collection is Enabled for Deployments only.
func NewTypeConfig(t Type) *corev1beta1.FederatedTypeConfig {
	namespaced := t.Target.Namespaced
	fgv := t.FederatedGroupVersion()
	ftc := &corev1beta1.FederatedTypeConfig{
		TypeMeta:   metav1.TypeMeta{APIVersion: corev1beta1.GroupVersion.String(), Kind: "FederatedTypeConfig"},
		ObjectMeta: metav1.ObjectMeta{Name: t.Target.Resource()},
		Spec: corev1beta1.FederatedTypeConfigSpec{
			TargetType: corev1beta1.APIResource{
				Group:      t.Target.Group,
				Version:    t.Target.Version,
				Kind:       t.Target.Kind,
				PluralName: t.Target.Plural,
				Scope:      t.Target.scope(),
			},
			Namespaced:  &namespaced,
			Propagation: corev1beta1.Enabled,
			FederatedType: corev1beta1.APIResource{
				Group:      fgv.Group,
				Version:    fgv.Version,
				Kind:       t.FederatedKind(),
				PluralName: t.FederatedPlural(),
				Scope:      t.FederatedScope(),
			},
		},
	}
	if statusCollected[t.Target.Resource()] {
		enabled := corev1beta1.Enabled
		ftc.Spec.StatusCollection = &enabled
	}
	return ftc
}
