package typeconfig

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

func typeConfig(name, targetKind, federatedKind string, propagation corev1beta1.Mode) corev1beta1.FederatedTypeConfig {
	return corev1beta1.FederatedTypeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1beta1.FederatedTypeConfigSpec{
			TargetType:    corev1beta1.APIResource{Version: "v1", Kind: targetKind},
			FederatedType: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: federatedKind, Scope: corev1beta1.NamespaceScoped},
			Propagation:   propagation,
		},
	}
}

func TestNamespaceKind(t *testing.T) {
	t.Parallel()
	configMaps := typeConfig("configmaps", "ConfigMap", "FederatedConfigMap", corev1beta1.Enabled)
	namespaces := typeConfig("namespaces", "Namespace", "FederatedNamespace", corev1beta1.Enabled)
	disabled := typeConfig("namespaces", "Namespace", "FederatedNamespace", corev1beta1.Disabled)
	deleting := typeConfig("namespaces", "Namespace", "FederatedNamespace", corev1beta1.Enabled)
	deleting.DeletionTimestamp = new(metav1.Now())
	other := typeConfig("namespaces.other", "Namespace", "OtherNamespace", corev1beta1.Enabled)
	tests := []struct {
		name string
		ftcs []corev1beta1.FederatedTypeConfig
		want string // federated kind, "" when namespaces are not federated
	}{
		{"no type", nil, ""},
		{"no namespace type", []corev1beta1.FederatedTypeConfig{configMaps}, ""},
		{"namespaces enabled, whatever the list's order", []corev1beta1.FederatedTypeConfig{namespaces, configMaps}, "FederatedNamespace"},
		{"namespaces disabled", []corev1beta1.FederatedTypeConfig{configMaps, disabled}, ""},
		{"namespaces being deleted", []corev1beta1.FederatedTypeConfig{deleting}, ""},
		{"two namespace types: the first by name", []corev1beta1.FederatedTypeConfig{other, namespaces}, "FederatedNamespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			gvk, ok := propagation.NamespaceKind(tt.ftcs)
			if gvk.Kind != tt.want || ok != (tt.want != "") {
				t.Errorf("NamespaceKind = %v, %v; want %q", gvk, ok, tt.want)
			}
		})
	}
}

func TestStartingState(t *testing.T) {
	t.Parallel()
	typ := propagation.Type{Federated: schema.GroupVersionKind{Kind: "FederatedDeployment"}, Target: schema.GroupVersionKind{Kind: "Deployment"}}
	forbidden := errors.New(`federateddeployments.types.kubefed.io is forbidden: User "system:serviceaccount:default:cm" cannot list resource "federateddeployments"`)
	timedOut := errors.New("timed out waiting for cache to be synced")
	tests := []struct {
		name              string
		wasRunning        bool
		stopped, listErr  error
		running           bool
		reason, messageIn string
	}{
		{"a new controller starts", false, nil, nil, false, corev1beta1.ReasonControllerStarting, "waits for its first list of FederatedDeployment"},
		{"a restart reports nothing new", true, nil, nil, true, corev1beta1.ReasonControllerRunning, "propagating FederatedDeployment"},
		{"a list refused is a failure, even after a restart", true, nil, forbidden, false, corev1beta1.ReasonControllerFailed, "cannot list FederatedDeployment (" + forbidden.Error()},
		{"a controller that stopped is a failure", true, timedOut, nil, false, corev1beta1.ReasonControllerFailed, "stopped: timed out waiting for cache to be synced; it was started again"},
		{"the list's error first, then the stop", false, timedOut, forbidden, false, corev1beta1.ReasonControllerFailed,
			`cannot list resource "federateddeployments"): it waits, and works once the list succeeds; if the controller-manager may not list it, grant it (the Helm chart's rbac.federatedResources); it gave up once and was started again (timed out waiting for cache to be synced)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := startingState(typ, tt.wasRunning, tt.stopped, tt.listErr)
			if s.running != tt.running || s.reason != tt.reason || !strings.Contains(s.message, tt.messageIn) {
				t.Errorf("startingState = %+v; want running %v, %s, a message with %q", s, tt.running, tt.reason, tt.messageIn)
			}
		})
	}
}
