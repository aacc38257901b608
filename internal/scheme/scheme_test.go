package scheme

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// The scheme knows a Kubernetes kind and a kind of each Fedwarden group,
// and each call returns a scheme of its own.
func TestNew(t *testing.T) {
	t.Parallel()
	s := New()
	for _, obj := range []runtime.Object{
		&appsv1.Deployment{},
		&corev1beta1.FederatedTypeConfig{},
		&typesv1beta1.ClusterPropagatedVersion{},
		&schedulingv1alpha1.ReplicaSchedulingPreference{},
	} {
		if _, _, err := s.ObjectKinds(obj); err != nil {
			t.Errorf("%T: %v", obj, err)
		}
	}
	if New() == s {
		t.Error("New returned the same scheme twice")
	}
}
