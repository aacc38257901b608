package admission

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CPVSpecWriter names the ClusterRole that lets the controller-manager
// create ClusterPropagatedVersions and write their spec, and the
// ClusterRoleBinding that grants it: the binding's subjects are the
// controller-manager's identity, and the parameter of CPVSpecPolicy, which
// refuses anybody else such a write. Whoever installs the controller-manager
// creates both (the Helm chart, localfed), with its identity as subject.
const CPVSpecWriter = "fedwarden-cpv-spec-writer"

// CPVSpecWriterRole returns the ClusterRole CPVSpecWriter: create and patch
// ClusterPropagatedVersions, what propagation does to keep one per
// federated resource in step with it.
func CPVSpecWriterRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: CPVSpecWriter, Labels: map[string]string{partOfLabel: partOf}},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{"types.kubefed.io"},
			Resources: []string{"clusterpropagatedversions"},
			Verbs:     []string{"create", "patch"},
		}},
	}
}

// CPVSpecWriterBinding returns the ClusterRoleBinding CPVSpecWriter, which
// grants CPVSpecWriterRole to the controller-manager's identity, subjects.
func CPVSpecWriterBinding(subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: CPVSpecWriter, Labels: map[string]string{partOfLabel: partOf}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: CPVSpecWriter},
		Subjects:   subjects,
	}
}

// The label every object Fedwarden ships with its CRDs has.
const (
	partOfLabel = "app.kubernetes.io/part-of"
	partOf      = "fedwarden"
)
