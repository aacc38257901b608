package registration

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
)

func pullSpec() Spec {
	s := validSpec()
	s.SyncMode = v1beta1.SyncModePull
	s.Resources = []Resource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}
	return s
}

func TestNewAgentHost(t *testing.T) {
	t.Parallel()
	h := NewAgentHost(pullSpec())
	agent := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: v1beta1.DefaultFederationNamespace, Name: "fedwarden-agent-member-1"}
	tests := []struct {
		name  string
		check func() string // a problem, or ""
	}{
		{name: "objects in apply order", check: func() string {
			var kinds []string
			for _, obj := range h.Objects() {
				kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName())
			}
			want := []string{"Namespace kube-federation-system", "ServiceAccount fedwarden-agent-member-1", "Secret fedwarden-agent-member-1-token",
				"ClusterRole fedwarden:agent", "ClusterRoleBinding fedwarden:agent:member-1",
				"ClusterRole fedwarden:agent:member-1:own-cluster", "ClusterRoleBinding fedwarden:agent:member-1:own-cluster", "Role fedwarden:agent:member-1",
				"RoleBinding fedwarden:agent:member-1", "Lease fedwarden-agent-member-1", "ValidatingAdmissionPolicy fedwarden-agent-isolation",
				"ValidatingAdmissionPolicyBinding fedwarden-agent-isolation", "FederatedCluster member-1"}
			if !slices.Equal(kinds, want) {
				return "objects " + strings.Join(kinds, ", ")
			}
			return ""
		}},
		{name: "no credentials in the FederatedCluster", check: func() string {
			if s := h.Cluster.Spec; s.SecretRef != nil || s.SyncMode != v1beta1.SyncModePull || s.APIEndpoint == "" {
				return "unexpected FederatedCluster spec"
			}
			return ""
		}},
		{name: "token Secret of the agent", check: func() string {
			s := h.TokenSecret
			if s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != "fedwarden-agent-member-1" || s.Data != nil {
				return "unexpected token Secret"
			}
			return ""
		}},
		{name: "bindings to the agent", check: func() string {
			if h.ClusterRoleBinding.RoleRef.Name != AgentClusterRoleName || !slices.Equal(h.ClusterRoleBinding.Subjects, []rbacv1.Subject{agent}) ||
				h.RoleBinding.RoleRef.Name != h.Role.Name || h.RoleBinding.RoleRef.Kind != "Role" || !slices.Equal(h.RoleBinding.Subjects, []rbacv1.Subject{agent}) {
				return "unexpected bindings"
			}
			return ""
		}},
		{name: "its own Lease only", check: func() string {
			want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"},
				ResourceNames: []string{"fedwarden-agent-member-1"}, Verbs: []string{"get", "update", "patch"}}}
			if !equality.Semantic.DeepEqual(h.Role.Rules, want) || h.Role.Namespace != v1beta1.DefaultFederationNamespace {
				return "unexpected Role"
			}
			return ""
		}},
		{name: "an empty Lease", check: func() string {
			if !equality.Semantic.DeepEqual(h.Lease.Spec, coordinationv1.LeaseSpec{}) {
				return "the Lease has a spec"
			}
			return ""
		}},
		{name: "shared objects carry no cluster label", check: func() string {
			for _, obj := range h.Shared() {
				if _, ok := obj.GetLabels()[v1beta1.LabelCluster]; ok {
					return obj.GetName() + " has a cluster label"
				}
			}
			return ""
		}},
		{name: "reads its own FederatedCluster and no other", check: func() string {
			rules := h.OwnClusterRole.Rules
			if len(rules) != 1 || !slices.Equal(rules[0].Resources, []string{"federatedclusters"}) || !slices.Equal(rules[0].ResourceNames, []string{"member-1"}) ||
				!slices.Equal(rules[0].Verbs, []string{"get"}) || h.OwnClusterRoleBinding.RoleRef.Name != h.OwnClusterRole.Name {
				return fmt.Sprintf("own-cluster rights %+v, bound to %s", rules, h.OwnClusterRoleBinding.RoleRef.Name)
			}
			return ""
		}},
		{name: "own objects are the agent's", check: func() string {
			for _, obj := range h.Own() {
				if obj.GetLabels()[v1beta1.LabelCluster] != "member-1" {
					return obj.GetName() + " lacks the cluster label"
				}
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if problem := tt.check(); problem != "" {
				t.Error(problem)
			}
		})
	}
}

// TestAgentClusterRole checks the least privilege of the agents on the host.
func TestAgentClusterRole(t *testing.T) {
	t.Parallel()
	role := AgentClusterRole()
	tests := []struct {
		name      string
		group     string
		resource  string
		verb      string
		wantAllow bool
	}{
		{"read FederatedTypeConfigs", "core.kubefed.io", "federatedtypeconfigs", "watch", true},
		{"read federated resources", "types.kubefed.io", "federateddeployments", "list", true},
		{"read CPVs", "types.kubefed.io", "clusterpropagatedversions", "get", true},
		{"patch CPV status", "types.kubefed.io", "clusterpropagatedversions/status", "patch", true},
		{"create Events", "events.k8s.io", "events", "create", true},
		{"create core Events", "", "events", "patch", true},
		{"no CPV update", "types.kubefed.io", "clusterpropagatedversions", "update", false},
		{"no CPV patch", "types.kubefed.io", "clusterpropagatedversions", "patch", false},
		{"no CPV status update", "types.kubefed.io", "clusterpropagatedversions/status", "update", false},
		{"no CPV delete", "types.kubefed.io", "clusterpropagatedversions", "delete", false},
		{"no federated resource write", "types.kubefed.io", "federatedsecrets", "patch", false},
		{"no FederatedCluster", "core.kubefed.io", "federatedclusters", "get", false},
		{"no FederatedCluster update", "core.kubefed.io", "federatedclusters", "update", false},
		{"no Secrets", "", "secrets", "get", false},
		{"no Leases (the Role grants its own)", "coordination.k8s.io", "leases", "update", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := allows(role.Rules, tt.group, tt.resource, tt.verb); got != tt.wantAllow {
				t.Errorf("%s %s.%s allowed: %v, want %v", tt.verb, tt.resource, tt.group, got, tt.wantAllow)
			}
		})
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.APIGroups, "*") || (slices.Contains(r.Resources, "*") && !slices.Equal(r.Verbs, readVerbs)) {
			t.Errorf("rule %+v grants too much", r)
		}
	}
}

// allows reports whether rules allow verb on resource of group, as RBAC
// matches them (resource "*" matches every resource of the group).
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Verbs, verb) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*"))
	})
}

func TestNewAgentMember(t *testing.T) {
	t.Parallel()
	spec := pullSpec()
	spec.PropagateRBAC = true
	m := NewAgentMember(spec, "example/fedwarden:v1", []byte("kubeconfig"))
	d := m.Deployment
	c := d.Spec.Template.Spec.Containers[0]
	tests := []struct {
		name  string
		check func() string
	}{
		{name: "objects in apply order", check: func() string {
			var kinds []string
			for _, obj := range m.Objects() {
				kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind+" "+obj.GetName())
			}
			want := []string{"Namespace kube-federation-system", "ServiceAccount fedwarden-agent", "ClusterRole fedwarden-agent",
				"ClusterRoleBinding fedwarden-agent", "Secret fedwarden-agent-host", "Deployment fedwarden-agent"}
			if !slices.Equal(kinds, want) {
				return "objects " + strings.Join(kinds, ", ")
			}
			return ""
		}},
		{name: "the push member's rules", check: func() string {
			if !equality.Semantic.DeepEqual(m.ClusterRole.Rules, NewMember(spec).ClusterRole.Rules) {
				return "rules differ from a Push member's"
			}
			return ""
		}},
		{name: "binding to the agent", check: func() string {
			want := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: spec.Namespace, Name: "fedwarden-agent"}
			if b := m.ClusterRoleBinding; b.RoleRef.Name != "fedwarden-agent" || !slices.Equal(b.Subjects, []rbacv1.Subject{want}) {
				return "unexpected binding"
			}
			return ""
		}},
		{name: "kubeconfig Secret", check: func() string {
			if string(m.Secret.Data["kubeconfig"]) != "kubeconfig" || m.Secret.Type != corev1.SecretTypeOpaque {
				return "unexpected Secret"
			}
			return ""
		}},
		{name: "one agent, run as its ServiceAccount", check: func() string {
			if *d.Spec.Replicas != 1 || d.Spec.Template.Spec.ServiceAccountName != "fedwarden-agent" || c.Image != "example/fedwarden:v1" {
				return "unexpected Deployment"
			}
			return ""
		}},
		{name: "arguments", check: func() string {
			want := []string{"agent", "--cluster-name", "member-1", "--host-kubeconfig", "/etc/fedwarden/host/kubeconfig",
				"--namespace", "kube-federation-system", "--metrics-bind-address", ":8080", "--health-probe-bind-address", ":8081"}
			if !slices.Equal(c.Args, want) {
				return "args " + strings.Join(c.Args, " ")
			}
			return ""
		}},
		{name: "the kubeconfig mounted read-only", check: func() string {
			v := d.Spec.Template.Spec.Volumes
			if len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != "/etc/fedwarden/host" ||
				len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != "fedwarden-agent-host" || v[0].Name != c.VolumeMounts[0].Name {
				return "unexpected volume"
			}
			return ""
		}},
		{name: "probes and ports", check: func() string {
			if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Port.StrVal != "probes" ||
				len(c.Ports) != 2 || c.Ports[0].ContainerPort != 8080 || c.Ports[1].ContainerPort != 8081 || c.Ports[1].Name != "probes" {
				return "unexpected probes or ports"
			}
			return ""
		}},
		{name: "restricted security context", check: func() string {
			pod, sc := d.Spec.Template.Spec.SecurityContext, c.SecurityContext
			if !*pod.RunAsNonRoot || pod.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *sc.AllowPrivilegeEscalation ||
				!*sc.ReadOnlyRootFilesystem || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
				return "security context not restricted"
			}
			return ""
		}},
		{name: "selector matches the pods", check: func() string {
			for k, v := range d.Spec.Selector.MatchLabels {
				if d.Spec.Template.Labels[k] != v {
					return "selector does not match"
				}
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if problem := tt.check(); problem != "" {
				t.Error(problem)
			}
		})
	}
}

func TestAgentKubeconfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		host    HostEndpoint
		wantErr string
	}{
		{name: "with a CA", host: HostEndpoint{Server: "https://10.0.0.1:6443", CAData: testCA}},
		{name: "system roots", host: HostEndpoint{Server: "https://host.example"}},
		{name: "server name", host: HostEndpoint{Server: "https://10.0.0.1:6443", CAData: testCA, TLSServerName: "api.example"}},
		{name: "http", host: HostEndpoint{Server: "http://10.0.0.1:8080"}, wantErr: "is not an https:// URL"},
		{name: "no host", host: HostEndpoint{Server: "https://"}, wantErr: "is not an https:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			data, err := AgentKubeconfig(pullSpec(), tt.host, []byte("the-token"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			kc, err := clientcmd.Load(data)
			if err != nil {
				t.Fatal(err)
			}
			ctx := kc.Contexts[kc.CurrentContext]
			cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
			if ctx.Namespace != "kube-federation-system" || cluster.Server != tt.host.Server || string(cluster.CertificateAuthorityData) != string(tt.host.CAData) ||
				cluster.TLSServerName != tt.host.TLSServerName || cluster.InsecureSkipTLSVerify || user.Token != "the-token" {
				t.Errorf("kubeconfig %s", data)
			}
		})
	}
}

func TestIsolationPolicy(t *testing.T) {
	t.Parallel()
	p, b := IsolationPolicy(), IsolationPolicyBinding()
	if b.Spec.PolicyName != p.Name || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) {
		t.Errorf("binding %+v does not deny with policy %s", b.Spec, p.Name)
	}
	if *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Error("the policy fails open")
	}
	var resources []string
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		resources = append(resources, r.Resources...)
		if !slices.Contains(r.Operations, admissionregistrationv1.Update) {
			t.Errorf("rule %+v does not match updates", r)
		}
	}
	for _, want := range []string{"clusterpropagatedversions", "clusterpropagatedversions/status", "federatedclusters", "events", "leases"} {
		if !slices.Contains(resources, want) {
			t.Errorf("the policy does not match %s", want)
		}
	}
	// Events and the Lease are created as well as updated.
	for _, r := range p.Spec.MatchConstraints.ResourceRules {
		if (slices.Contains(r.Resources, "events") || slices.Contains(r.Resources, "leases")) && !slices.Contains(r.Operations, admissionregistrationv1.Create) {
			t.Errorf("rule %+v does not match creations", r)
		}
	}
	var expressions []string
	for _, v := range p.Spec.Validations {
		expressions = append(expressions, v.Expression)
	}
	for _, want := range []string{"variables.placed", "request.namespace == variables.controlPlane", "variables.leaseSeconds >= 10 && variables.leaseSeconds <= 600"} {
		if !slices.ContainsFunc(expressions, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("no rule checks %q: %q", want, expressions)
		}
	}
	for _, v := range p.Spec.Validations {
		if !strings.Contains(v.MessageExpression, "variables.cluster") || strings.ContainsAny(v.MessageExpression, "\n\t") {
			t.Errorf("message %q does not name the agent's cluster on one line", v.MessageExpression)
		}
	}
}
