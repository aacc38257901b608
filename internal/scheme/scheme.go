// Package scheme builds the one runtime.Scheme that Fedwarden's commands,
// controllers, agent and console decode with: the Kubernetes kinds of
// client-go and Fedwarden's API groups (core, types and scheduling).
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// groups add the kinds of the scheme.
var groups = []func(*runtime.Scheme) error{
	clientgoscheme.AddToScheme,
	corev1beta1.AddToScheme,
	typesv1beta1.AddToScheme,
	schedulingv1alpha1.AddToScheme,
}

// New returns a new scheme of the Kubernetes kinds and Fedwarden's. The
// caller owns it and may add other groups to it. Adding a group fails only
// when two registrations conflict, a programming error every test would
// hit, so New panics then, as client-go's own scheme package does.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range groups {
		utilruntime.Must(add(s))
	}
	return s
}
