package federatedtype

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

var (
	deployments  = Target{Group: "apps", Version: "v1", Kind: "Deployment", Plural: "deployments", Namespaced: true}
	replicasets  = Target{Group: "apps", Version: "v1", Kind: "ReplicaSet", Plural: "replicasets", Namespaced: true}
	configmaps   = Target{Version: "v1", Kind: "ConfigMap", Plural: "configmaps", Namespaced: true}
	namespaces   = Target{Version: "v1", Kind: "Namespace", Plural: "namespaces"}
	clusterroles = Target{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", Plural: "clusterroles"}
)

func TestNewTypeConfig(t *testing.T) {
	t.Parallel()
	enabled := corev1beta1.Enabled
	tests := []struct {
		name      string
		typ       Type
		wantName  string
		target    corev1beta1.APIResource
		federated corev1beta1.APIResource
		status    *corev1beta1.Mode
	}{
		{
			name: "core group", typ: Type{Target: configmaps}, wantName: "configmaps",
			target:    corev1beta1.APIResource{Version: "v1", Kind: "ConfigMap", PluralName: "configmaps", Scope: corev1beta1.NamespaceScoped},
			federated: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedConfigMap", PluralName: "federatedconfigmaps", Scope: corev1beta1.NamespaceScoped},
		},
		{
			name: "deployments collect status", typ: Type{Target: deployments}, wantName: "deployments.apps", status: &enabled,
			target:    corev1beta1.APIResource{Group: "apps", Version: "v1", Kind: "Deployment", PluralName: "deployments", Scope: corev1beta1.NamespaceScoped},
			federated: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment", PluralName: "federateddeployments", Scope: corev1beta1.NamespaceScoped},
		},
		{
			name: "cluster scoped", typ: Type{Target: clusterroles}, wantName: "clusterroles.rbac.authorization.k8s.io",
			target:    corev1beta1.APIResource{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole", PluralName: "clusterroles", Scope: corev1beta1.ClusterScoped},
			federated: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedClusterRole", PluralName: "federatedclusterroles", Scope: corev1beta1.ClusterScoped},
		},
		{
			name: "a FederatedNamespace is namespaced", typ: Type{Target: namespaces}, wantName: "namespaces",
			target:    corev1beta1.APIResource{Version: "v1", Kind: "Namespace", PluralName: "namespaces", Scope: corev1beta1.ClusterScoped},
			federated: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedNamespace", PluralName: "federatednamespaces", Scope: corev1beta1.NamespaceScoped},
		},
		{
			name: "federated group and version", typ: Type{Target: configmaps, FederatedGroup: "fed.example.com", FederatedVersion: "v1"}, wantName: "configmaps",
			target:    corev1beta1.APIResource{Version: "v1", Kind: "ConfigMap", PluralName: "configmaps", Scope: corev1beta1.NamespaceScoped},
			federated: corev1beta1.APIResource{Group: "fed.example.com", Version: "v1", Kind: "FederatedConfigMap", PluralName: "federatedconfigmaps", Scope: corev1beta1.NamespaceScoped},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ftc := NewTypeConfig(tt.typ)
			if ftc.Name != tt.wantName {
				t.Errorf("name %q, want %q", ftc.Name, tt.wantName)
			}
			if ftc.APIVersion != "core.kubefed.io/v1beta1" || ftc.Kind != "FederatedTypeConfig" {
				t.Errorf("apiVersion %q, kind %q", ftc.APIVersion, ftc.Kind)
			}
			s := ftc.Spec
			if s.TargetType != tt.target {
				t.Errorf("targetType %+v, want %+v", s.TargetType, tt.target)
			}
			if s.FederatedType != tt.federated {
				t.Errorf("federatedType %+v, want %+v", s.FederatedType, tt.federated)
			}
			// The CEL rules of the FederatedTypeConfig CRD.
			if s.Namespaced == nil || *s.Namespaced != (s.TargetType.Scope == corev1beta1.NamespaceScoped) {
				t.Errorf("namespaced %v disagrees with scope %s", s.Namespaced, s.TargetType.Scope)
			}
			if s.FederatedType.Scope != s.TargetType.Scope && s.TargetType.Kind != "Namespace" {
				t.Errorf("federated scope %s, target scope %s", s.FederatedType.Scope, s.TargetType.Scope)
			}
			if s.Propagation != corev1beta1.Enabled {
				t.Errorf("propagation %q, want Enabled", s.Propagation)
			}
			if !equality.Semantic.DeepEqual(s.StatusCollection, tt.status) {
				t.Errorf("statusCollection %v, want %v", s.StatusCollection, tt.status)
			}
		})
	}
}
