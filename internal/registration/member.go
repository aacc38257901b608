package registration

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// writeVerbs are the verbs granted on the resources the host propagates.
var writeVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// probeURLs are the non-resource URLs the health probe reads.
var probeURLs = []string{"/readyz", "/healthz", "/livez", "/version"}

// Member holds the objects that let the host into a member cluster.
type Member struct {
	Namespace          *corev1.Namespace
	ServiceAccount     *corev1.ServiceAccount
	TokenSecret        *corev1.Secret
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
}

// NewMember builds the member objects of s, which must be valid.
func NewMember(s Spec) *Member {
	sa := ServiceAccountName(s.Name)
	role := ClusterRoleName(s.Name)
	return &Member{
		Namespace: namespace(s.Namespace),
		ServiceAccount: &corev1.ServiceAccount{
			TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "ServiceAccount"),
			ObjectMeta: objectMeta(s.Name, s.Namespace, sa),
		},
		TokenSecret: tokenSecret(s),
		ClusterRole: &rbacv1.ClusterRole{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRole"),
			ObjectMeta: objectMeta(s.Name, "", role),
			Rules:      memberRules(s),
		},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{
			TypeMeta:   typeMeta(rbacv1.SchemeGroupVersion.String(), "ClusterRoleBinding"),
			ObjectMeta: objectMeta(s.Name, "", role),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: s.Namespace, Name: sa}},
		},
	}
}

// Objects returns the objects in the order they are applied: each one
// before those that refer to it.
func (m *Member) Objects() []client.Object {
	return []client.Object{m.Namespace, m.ServiceAccount, m.TokenSecret, m.ClusterRole, m.ClusterRoleBinding}
}

// tokenSecret asks the member's token controller for a long-lived token of
// the ServiceAccount; the controller fills in data.token and data["ca.crt"].
func tokenSecret(s Spec) *corev1.Secret {
	meta := objectMeta(s.Name, s.Namespace, TokenSecretName(s.Name))
	meta.Annotations = map[string]string{corev1.ServiceAccountNameKey: ServiceAccountName(s.Name)}
	return &corev1.Secret{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Secret"),
		ObjectMeta: meta,
		Type:       corev1.SecretTypeServiceAccountToken,
	}
}

// Rules returns the member ClusterRole's rules: the rights propagation needs
// (see the package documentation) on resources.
func Rules(resources []Resource) []rbacv1.PolicyRule {
	probe := rbacv1.PolicyRule{NonResourceURLs: slices.Clone(probeURLs), Verbs: []string{"get"}}
	rules := writeRules(resources)
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch", "create"}},
		// What the scheduler's Capacity plugin reads to measure free room.
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
		probe,
	)
	return rules
}

// memberRules returns the member ClusterRole's rules for s: Rules, and the
// RBAC rule when s.PropagateRBAC.
func memberRules(s Spec) []rbacv1.PolicyRule {
	rules := Rules(s.Resources)
	if s.PropagateRBAC {
		rules = append(rules, rbacRule())
	}
	return rules
}

// rbacRule grants what creating RBAC objects that grant or bind rights the
// host does not hold takes: bind and escalate on roles and clusterroles.
func rbacRule() rbacv1.PolicyRule {
	return rbacv1.PolicyRule{
		APIGroups: []string{rbacv1.GroupName},
		Resources: []string{"roles", "clusterroles"},
		Verbs:     []string{"bind", "escalate"},
	}
}

// writeRules grants writeVerbs on resources, one rule per group, groups in
// the order they first appear.
func writeRules(resources []Resource) []rbacv1.PolicyRule {
	var rules []rbacv1.PolicyRule
	index := map[string]int{}
	for _, r := range resources {
		i, ok := index[r.Group]
		if !ok {
			i = len(rules)
			index[r.Group] = i
			rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{r.Group}, Verbs: slices.Clone(writeVerbs)})
		}
		if !slices.Contains(rules[i].Resources, r.Resource) {
			rules[i].Resources = append(rules[i].Resources, r.Resource)
		}
	}
	return rules
}

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta:   typeMeta(corev1.SchemeGroupVersion.String(), "Namespace"),
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelManagedBy: ManagedBy}},
	}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// objectMeta is the metadata of an object of cluster, with its labels.
func objectMeta(cluster, namespace, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels(cluster)}
}

// labels are the labels of every object of cluster but Namespaces.
func labels(cluster string) map[string]string {
	return map[string]string{v1beta1.LabelCluster: cluster, LabelManagedBy: ManagedBy}
}
