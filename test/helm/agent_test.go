package helm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/registration"
)

// agentMode are the values of an install of the agent alone, in a member.
var agentMode = []string{"--set", "controllerManager.enabled=false,agent.enabled=true,agent.clusterName=member-1"}

// TestAgentSharedObjectsAreJoins checks that the host objects every agent
// shares are those `fedwarden join --sync-mode Pull` applies, so that either
// may install them: the ClusterRole fedwarden:agent and the isolation policy.
func TestAgentSharedObjectsAreJoins(t *testing.T) {
	needHelm(t)
	t.Parallel()
	objs := mustRender(t)
	var role rbacv1.ClusterRole
	findNamed(t, objs, "ClusterRole", registration.AgentClusterRoleName, &role)
	if want := registration.AgentClusterRole().Rules; !equality.Semantic.DeepEqual(role.Rules, want) {
		t.Errorf("the chart's ClusterRole %s grants\n%+v\njoin's\n%+v", role.Name, role.Rules, want)
	}
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	findNamed(t, objs, "ValidatingAdmissionPolicy", registration.AgentIsolationPolicyName, &policy)
	want := registration.IsolationPolicy()
	if policy.Name != want.Name || !equality.Semantic.DeepEqual(policy.Spec, want.Spec) {
		t.Errorf("the chart's isolation policy differs from join's (internal/registration/isolation.go):\n%+v\nwant\n%+v", policy.Spec, want.Spec)
	}
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	findNamed(t, objs, "ValidatingAdmissionPolicyBinding", registration.AgentIsolationPolicyName, &binding)
	if wantBinding := registration.IsolationPolicyBinding(); binding.Name != wantBinding.Name || !equality.Semantic.DeepEqual(binding.Spec, wantBinding.Spec) {
		t.Errorf("the chart's policy binding %+v differs from join's %+v", binding.Spec, wantBinding.Spec)
	}
	if binding.Labels[registration.LabelManagedBy] != "Helm" {
		t.Errorf("the binding's labels %v do not tell join it is Helm's", binding.Labels)
	}
	// The API server compiles the policy's CEL on create: a server-side dry
	// run refuses an expression that does not compile.
	c, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for _, o := range objs {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") {
			if _, err := dryRunApply(ctx, c, o); err != nil {
				t.Errorf("the API server refuses %s: %v", describe(o), err)
			}
		}
	}
}

// TestAgentIsolationDisabled checks the switch of the isolation policy.
func TestAgentIsolationDisabled(t *testing.T) {
	needHelm(t)
	t.Parallel()
	for _, o := range mustRender(t, "--set", "agentIsolation.enabled=false") {
		if strings.HasPrefix(o.GetKind(), "ValidatingAdmissionPolicy") && o.GetName() == registration.AgentIsolationPolicyName {
			t.Errorf("agentIsolation.enabled=false renders %s", describe(o))
		}
	}
}

// TestAgentMode renders the agent alone, as in a member, and applies it to
// the member with server-side dry-run; it checks what a reviewer of the
// agent looks for.
func TestAgentMode(t *testing.T) {
	needHelm(t)
	t.Parallel()
	var objs []*unstructured.Unstructured
	var kinds []string
	for _, o := range mustRender(t, agentMode...) {
		if o.GetKind() != "CustomResourceDefinition" { // helm install --skip-crds in a member
			objs = append(objs, o)
			kinds = append(kinds, o.GetKind())
		}
	}
	if want := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"}; !sameElements(kinds, want) {
		t.Fatalf("the agent mode renders %v, want %v", kinds, want)
	}
	var role rbacv1.ClusterRole
	find(t, objs, "ClusterRole", &role)
	for _, r := range role.Rules {
		for _, s := range slices.Concat(r.Verbs, r.Resources, r.APIGroups, r.NonResourceURLs) {
			if strings.Contains(s, "*") {
				t.Errorf("rule %+v grants *", r)
			}
		}
		if slices.Contains(r.Resources, "secrets") {
			t.Errorf("rule %+v grants %v on Secrets", r, r.Verbs)
		}
		for _, v := range r.Verbs {
			if slices.Contains([]string{"escalate", "bind", "impersonate", "deletecollection"}, v) {
				t.Errorf("rule %+v grants %s", r, v)
			}
		}
	}
	checkAgentDeployment(t, objs)
	checkAgentAccepted(t, objs)
}

// checkAgentDeployment checks the agent's Deployment.
func checkAgentDeployment(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	var crb rbacv1.ClusterRoleBinding
	find(t, objs, "ClusterRoleBinding", &crb)
	pod := d.Spec.Template.Spec
	if *d.Spec.Replicas != 1 || pod.ServiceAccountName != sa.Name || !slices.Equal(crb.Subjects, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: namespace}}) {
		t.Errorf("replicas %d, running as %s; binding %+v", *d.Spec.Replicas, pod.ServiceAccountName, crb.Subjects)
	}
	c := pod.Containers[0]
	want := []string{"agent", "--cluster-name=member-1", "--host-kubeconfig=" + registration.AgentHostKubeconfigPath, "--namespace=" + namespace,
		"--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if c.Image != "ghcr.io/fedwarden/fedwarden:"+appVersion(t) {
		t.Errorf("image %s", c.Image)
	}
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != registration.AgentHostKubeconfigSecretName ||
		len(c.VolumeMounts) != 1 || !c.VolumeMounts[0].ReadOnly || c.VolumeMounts[0].MountPath != registration.AgentHostKubeconfigDir {
		t.Errorf("volumes %+v, mounts %+v: want Secret %s read-only at %s", pod.Volumes, c.VolumeMounts,
			registration.AgentHostKubeconfigSecretName, registration.AgentHostKubeconfigDir)
	}
	for path, p := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != path || p.HTTPGet.Port.String() != "probes" {
			t.Errorf("no probe GET %s on port probes: %+v", path, p)
		}
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if psc == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("security context not restricted: pod %+v, container %+v", psc, sc)
	}
}

// checkAgentAccepted applies the agent's objects to the member with
// server-side dry-run.
func checkAgentAccepted(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	c, err := newClient(fed.Members[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range objs {
		got, err := dryRunApply(ctx, c, o)
		if err != nil {
			t.Errorf("the member's API server refuses %s: %v", describe(o), err)
		} else if got.GetUID() == "" {
			t.Errorf("the dry-run answer is not the object: %s", describe(got))
		}
	}
}

// TestAgentValues checks the agent's settings, and that wrong ones fail at
// `helm template`.
func TestAgentValues(t *testing.T) {
	needHelm(t)
	t.Parallel()
	tests := []struct {
		name     string
		set      string
		wantArg  string
		wantRule string
		wantErr  string
	}{
		{name: "no cluster name", set: "controllerManager.enabled=false,agent.enabled=true", wantErr: "agent.clusterName is required with agent.enabled"},
		{name: "host namespace", set: "agent.hostNamespace=fed", wantArg: "--namespace=fed"},
		{name: "extra args", set: "agent.extraArgs={--zap-log-level=debug}", wantArg: "--zap-log-level=debug"},
		{name: "extra rules", set: "agent.rbac.extraRules[0].apiGroups={policy},agent.rbac.extraRules[0].resources={poddisruptionbudgets},agent.rbac.extraRules[0].verbs={get}",
			wantRule: "poddisruptionbudgets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set := "controllerManager.enabled=false,agent.enabled=true,agent.clusterName=member-1," + tt.set
			if tt.wantErr != "" {
				set = tt.set
			}
			objs, err := render("--set", set)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantArg != "" {
				var d appsv1.Deployment
				find(t, objs, "Deployment", &d)
				if !slices.Contains(d.Spec.Template.Spec.Containers[0].Args, tt.wantArg) {
					t.Errorf("args %q lack %q", d.Spec.Template.Spec.Containers[0].Args, tt.wantArg)
				}
			}
			if tt.wantRule != "" {
				var role rbacv1.ClusterRole
				find(t, objs, "ClusterRole", &role)
				if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool { return slices.Contains(r.Resources, tt.wantRule) }) {
					t.Errorf("rules %+v lack %s", role.Rules, tt.wantRule)
				}
			}
		})
	}
}

// TestBothSides checks that a release with the controller-manager and the
// agent renders both, as in a host that is also a Pull member.
func TestBothSides(t *testing.T) {
	needHelm(t)
	t.Parallel()
	var deployments []string
	for _, o := range mustRender(t, "--set", "agent.enabled=true,agent.clusterName=host") {
		if o.GetKind() == "Deployment" {
			deployments = append(deployments, o.GetName())
		}
	}
	if want := []string{"fedwarden-controller-manager", "fedwarden-agent"}; !sameElements(deployments, want) {
		t.Errorf("Deployments %v, want %v", deployments, want)
	}
}

// sameElements reports whether a and b hold the same strings, in any order.
func sameElements(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
