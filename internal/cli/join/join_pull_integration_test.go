package join_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/cli/unjoin"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/poll"
)

const cluster = "member-1"

// TestJoinPull joins member-1 in Pull mode, first printing the member's
// manifest, then applying it; checks what the agent's kubeconfig may and
// may not do on the host; joins again; and unjoins.
func TestJoinPull(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tb, _ := startTestBed(ctx, t)
	path := filepath.Join(t.TempDir(), "agent.kubeconfig")
	pull := []string{"--sync-mode", "Pull", "--agent-kubeconfig", path}

	// --print-agent-manifest: nothing in the member, and no wait for Ready.
	stdout, stderr, code := tb.run(join.NewCommand, append(pull, "--print-agent-manifest")...)
	if code != 0 {
		t.Fatalf("join --print-agent-manifest exited with %d:\n%s", code, stderr)
	}
	checkPrintedManifest(t, stdout, stderr, path)
	checkNotThere(ctx, t, tb.member, &corev1.ServiceAccount{}, client.ObjectKey{Namespace: ns, Name: registration.AgentMemberServiceAccountName})
	token := checkAgentKubeconfig(t, path)
	if strings.Contains(stdout+stderr, token) {
		t.Fatal("join printed the agent's token")
	}

	stdout, stderr, code = tb.run(join.NewCommand, append(pull, "--wait=false")...)
	if code != 0 {
		t.Fatalf("join exited with %d:\n%s", code, stderr)
	}
	if strings.Contains(stdout+stderr, token) {
		t.Fatal("join printed the agent's token")
	}
	versions := checkPullHost(ctx, t, tb.host)
	checkPullMember(ctx, t, tb.member, path)

	agent := clitest.Client(t, path)
	checkIdentity(ctx, t, agent)
	checkAgentRights(ctx, t, clitest.Client(t, tb.hostKubeconfig()), agent)

	stdout, stderr, code = tb.run(join.NewCommand, append(pull, "--wait=false")...)
	if code != 0 {
		t.Fatalf("join again exited with %d:\n%s", code, stderr)
	}
	if strings.Contains(stderr, "created") || strings.Contains(stderr, "configured") || strings.Contains(stdout+stderr, token) {
		t.Errorf("a second join reports changes, or the token:\n%s", stderr)
	}
	if again := checkPullHost(ctx, t, tb.host); !maps.Equal(again, versions) {
		t.Errorf("a second join changed host objects: resourceVersions %v, then %v", versions, again)
	}
	lease := &coordinationv1.Lease{}
	if err := tb.host.Get(ctx, client.ObjectKey{Namespace: ns, Name: registration.AgentLeaseName(cluster)}, lease); err != nil {
		t.Fatal(err)
	}
	if lease.Spec.RenewTime == nil || lease.Spec.HolderIdentity == nil {
		t.Errorf("a second join reset the Lease the agent renewed: %+v", lease.Spec)
	}

	// Without the member's kubeconfig, unjoin removes the host side only.
	_, stderr, code = clitest.Execute(unjoin.NewCommand, cluster, "--host-kubeconfig", tb.hostKubeconfig())
	if code != 0 || !strings.Contains(stderr, "the agent's objects in the member were left") {
		t.Fatalf("unjoin without the member's kubeconfig: exit code %d:\n%s", code, stderr)
	}
	waitGone(ctx, t, tb.host, &v1beta1.FederatedCluster{}, client.ObjectKey{Name: cluster})
	if err := tb.member.Get(ctx, client.ObjectKey{Namespace: ns, Name: registration.AgentDeploymentName}, &appsv1.Deployment{}); err != nil {
		t.Errorf("unjoin without the member's kubeconfig touched the member: %v", err)
	}
	tb.mustRun(t, unjoin.NewCommand) // the FederatedCluster is gone: both modes' objects
	for _, o := range []struct {
		c   client.Client
		obj client.Object
		key client.ObjectKey
	}{
		{tb.host, &v1beta1.FederatedCluster{}, client.ObjectKey{Name: cluster}},
		{tb.host, &corev1.ServiceAccount{}, client.ObjectKey{Namespace: ns, Name: registration.AgentServiceAccountName(cluster)}},
		{tb.host, &corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: registration.AgentTokenSecretName(cluster)}},
		{tb.host, &rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: registration.AgentBindingName(cluster)}},
		{tb.host, &rbacv1.Role{}, client.ObjectKey{Namespace: ns, Name: registration.AgentBindingName(cluster)}},
		{tb.host, &rbacv1.RoleBinding{}, client.ObjectKey{Namespace: ns, Name: registration.AgentBindingName(cluster)}},
		{tb.host, &coordinationv1.Lease{}, client.ObjectKey{Namespace: ns, Name: registration.AgentLeaseName(cluster)}},
		{tb.member, &appsv1.Deployment{}, client.ObjectKey{Namespace: ns, Name: registration.AgentDeploymentName}},
		{tb.member, &corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: registration.AgentHostKubeconfigSecretName}},
		{tb.member, &corev1.ServiceAccount{}, client.ObjectKey{Namespace: ns, Name: registration.AgentMemberServiceAccountName}},
		{tb.member, &rbacv1.ClusterRole{}, client.ObjectKey{Name: registration.AgentMemberServiceAccountName}},
		{tb.member, &rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: registration.AgentMemberServiceAccountName}},
	} {
		waitGone(ctx, t, o.c, o.obj, o.key)
	}
	// What every agent shares stays.
	if err := tb.host.Get(ctx, client.ObjectKey{Name: registration.AgentClusterRoleName}, &rbacv1.ClusterRole{}); err != nil {
		t.Errorf("unjoin deleted the shared ClusterRole: %v", err)
	}
	if err := tb.host.Get(ctx, client.ObjectKey{Name: registration.AgentIsolationPolicyName}, &admissionregistrationv1.ValidatingAdmissionPolicy{}); err != nil {
		t.Errorf("unjoin deleted the isolation policy: %v", err)
	}
}

// checkPrintedManifest checks the manifest --print-agent-manifest prints,
// and the command it tells to create the Secret with.
func checkPrintedManifest(t *testing.T, stdout, stderr, path string) {
	t.Helper()
	var kinds []string
	for doc := range strings.SplitSeq(stdout, "\n---\n") {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
			t.Fatalf("document %q: %v", doc, err)
		}
		kinds = append(kinds, u.GetKind()+" "+u.GetName())
	}
	want := []string{"Namespace " + ns, "ServiceAccount fedwarden-agent", "ClusterRole fedwarden-agent", "ClusterRoleBinding fedwarden-agent", "Deployment fedwarden-agent"}
	if !slices.Equal(kinds, want) {
		t.Errorf("printed manifest holds %v, want %v", kinds, want)
	}
	if cmd := "kubectl -n " + ns + " create secret generic fedwarden-agent-host --from-file=kubeconfig=" + path; !strings.Contains(stderr, cmd) {
		t.Errorf("stderr does not say %q:\n%s", cmd, stderr)
	}
}

// checkAgentKubeconfig checks the agent's kubeconfig file and returns its
// token.
func checkAgentKubeconfig(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the agent's kubeconfig has mode %v, want 0600", info.Mode().Perm())
	}
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || ctx.Namespace != ns {
		t.Fatalf("current context %+v, want one whose namespace is %s", ctx, ns)
	}
	c, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	if c == nil || user == nil || c.InsecureSkipTLSVerify || len(c.CertificateAuthorityData) == 0 || !strings.HasPrefix(c.Server, "https://") || user.Token == "" {
		t.Fatalf("cluster %+v, user with token: %v", c, user != nil && user.Token != "")
	}
	return user.Token
}

// checkPullHost checks the host objects of the Pull cluster, and returns
// their resourceVersions.
func checkPullHost(ctx context.Context, t *testing.T, host client.Client) map[string]string {
	t.Helper()
	fc := &v1beta1.FederatedCluster{}
	if err := host.Get(ctx, client.ObjectKey{Name: cluster}, fc); err != nil {
		t.Fatal(err)
	}
	if fc.Spec.SyncMode != v1beta1.SyncModePull || fc.Spec.SecretRef != nil || !strings.HasPrefix(fc.Spec.APIEndpoint, "https://") {
		t.Errorf("FederatedCluster spec = %+v, want Pull, an endpoint and no secretRef", fc.Spec)
	}
	checkNotThere(ctx, t, host, &corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: registration.CredentialsSecretName(cluster)})
	versions := map[string]string{"FederatedCluster": fc.ResourceVersion}
	role := &rbacv1.ClusterRole{}
	objs := map[string]struct {
		obj client.Object
		key client.ObjectKey
	}{
		"ServiceAccount":     {&corev1.ServiceAccount{}, client.ObjectKey{Namespace: ns, Name: "fedwarden-agent-member-1"}},
		"Secret":             {&corev1.Secret{}, client.ObjectKey{Namespace: ns, Name: "fedwarden-agent-member-1-token"}},
		"ClusterRole":        {role, client.ObjectKey{Name: "fedwarden:agent"}},
		"ClusterRoleBinding": {&rbacv1.ClusterRoleBinding{}, client.ObjectKey{Name: "fedwarden:agent:member-1"}},
		"Role":               {&rbacv1.Role{}, client.ObjectKey{Namespace: ns, Name: "fedwarden:agent:member-1"}},
		"RoleBinding":        {&rbacv1.RoleBinding{}, client.ObjectKey{Namespace: ns, Name: "fedwarden:agent:member-1"}},
		"Lease":              {&coordinationv1.Lease{}, client.ObjectKey{Namespace: ns, Name: "fedwarden-agent-member-1"}},
		"Policy":             {&admissionregistrationv1.ValidatingAdmissionPolicy{}, client.ObjectKey{Name: "fedwarden-agent-isolation"}},
		"PolicyBinding":      {&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, client.ObjectKey{Name: "fedwarden-agent-isolation"}},
	}
	for kind, o := range objs {
		if err := host.Get(ctx, o.key, o.obj); err != nil {
			t.Fatalf("reading the %s %s: %v", kind, o.key, err)
		}
		// The agent renews the Lease; using the token labels its Secret
		// (kubernetes.io/legacy-token-last-used).
		if kind != "Lease" && kind != "Secret" {
			versions[kind] = o.obj.GetResourceVersion()
		}
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Resources, "secrets") || slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" && v != "create" && v != "patch" }) {
			t.Errorf("the agent's ClusterRole grants %+v", r)
		}
	}
	return versions
}

// checkPullMember checks the agent's objects in the member.
func checkPullMember(ctx context.Context, t *testing.T, member client.Client, path string) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fedwarden-agent"}, d); err != nil {
		t.Fatal(err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	wantArgs := []string{"agent", "--cluster-name", cluster, "--host-kubeconfig", "/etc/fedwarden/host/kubeconfig", "--namespace", ns,
		"--metrics-bind-address", ":8080", "--health-probe-bind-address", ":8081"}
	if !slices.Equal(c.Args, wantArgs) || !strings.HasPrefix(c.Image, "ghcr.io/fedwarden/fedwarden:") || d.Spec.Template.Spec.ServiceAccountName != "fedwarden-agent" {
		t.Errorf("the agent's container runs %s %q as %s", c.Image, c.Args, d.Spec.Template.Spec.ServiceAccountName)
	}
	secret := &corev1.Secret{}
	if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fedwarden-agent-host"}, secret); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(secret.Data["kubeconfig"]) != string(file) {
		t.Error("the member Secret does not hold the agent's kubeconfig that join wrote")
	}
	role := &rbacv1.ClusterRole{}
	if err := member.Get(ctx, client.ObjectKey{Name: "fedwarden-agent"}, role); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.Resources, "configmaps") && slices.Contains(r.Verbs, "create")
	}) {
		t.Errorf("the agent cannot write ConfigMaps in the member: %+v", role.Rules)
	}
	if err := member.Get(ctx, client.ObjectKey{Name: "fedwarden-agent"}, &rbacv1.ClusterRoleBinding{}); err != nil {
		t.Error(err)
	}
	// No push-mode identity for the host.
	checkNotThere(ctx, t, member, &corev1.ServiceAccount{}, client.ObjectKey{Namespace: ns, Name: registration.ServiceAccountName(cluster)})
}

// checkIdentity checks that the agent's kubeconfig authenticates as its
// ServiceAccount.
func checkIdentity(ctx context.Context, t *testing.T, agent client.Client) {
	t.Helper()
	review := &authenticationv1.SelfSubjectReview{}
	if err := agent.Create(ctx, review); err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + ns + ":fedwarden-agent-member-1"; review.Status.UserInfo.Username != want {
		t.Errorf("the agent is %q, want %q", review.Status.UserInfo.Username, want)
	}
}

// checkAgentRights checks, on a CPV placed on member-1 and another
// cluster, that the agent may write its own entry, and only that.
func checkAgentRights(ctx context.Context, t *testing.T, admin, agent client.Client) {
	t.Helper()
	const cpvNS = "pull"
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cpvNS}}); err != nil {
		t.Fatal(err)
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: cpvNS, Name: "configmap-settings"},
		// Placed on the agent's cluster: the agent may write its entry only
		// there.
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Template: "settings", Clusters: []typesv1beta1.PlacedCluster{{Name: cluster}}},
	}
	if err := admin.Create(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	cpv.Status = typesv1beta1.ClusterPropagatedVersionStatus{
		TemplateVersion: "1",
		ClusterVersions: []typesv1beta1.ClusterVersion{{ClusterName: "other", Version: "7"}},
	}
	if err := admin.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the agent to list CPVs: RBAC reaches the authorizer through informers", poll.NoError(func(context.Context) error { // RBAC reaches the authorizer through informers
		return agent.List(ctx, &typesv1beta1.ClusterPropagatedVersionList{}, client.InNamespace(cpvNS))
	}))
	applyStatus := func(status map[string]any) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": typesv1beta1.GroupVersion.String(), "kind": "ClusterPropagatedVersion",
			"metadata": map[string]any{"namespace": cpvNS, "name": cpv.Name},
			"status":   status,
		}}
		return agent.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(registration.AgentFieldManager(cluster)), client.ForceOwnership)
	}
	entry := func(name, version string) map[string]any {
		return map[string]any{"clusterName": name, "version": version}
	}

	// Adding its entry, then changing it.
	for _, version := range []string{"1", "2"} {
		if err := applyStatus(map[string]any{"clusterVersions": []any{entry(cluster, version)}}); err != nil {
			t.Fatalf("the agent cannot write its own entry: %v", err)
		}
	}
	got := &typesv1beta1.ClusterPropagatedVersion{}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(cpv), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"other": "7", cluster: "2"}
	for _, cv := range got.Status.ClusterVersions {
		if want[string(cv.ClusterName)] != cv.Version {
			t.Errorf("entry %+v, want versions %v", cv, want)
		}
	}
	if got.Status.TemplateVersion != "1" || len(got.Status.ClusterVersions) != 2 {
		t.Errorf("status = %+v", got.Status)
	}
	if !slices.ContainsFunc(got.ManagedFields, func(m metav1.ManagedFieldsEntry) bool {
		return m.Manager == registration.AgentFieldManager(cluster) && m.Subresource == "status"
	}) {
		t.Errorf("no managed fields of %s", registration.AgentFieldManager(cluster))
	}

	for _, tt := range []struct {
		name   string
		status map[string]any
		want   string
	}{
		{"another cluster's entry", map[string]any{"clusterVersions": []any{entry("other", "8")}}, "entries of cluster(s) other"},
		{"a new cluster's entry", map[string]any{"clusterVersions": []any{entry("third", "1")}}, "entries of cluster(s) third"},
		{"the template version", map[string]any{"templateVersion": "2"}, "status.templateVersion"},
	} {
		err := applyStatus(tt.status)
		t.Logf("the agent writing %s: %v", tt.name, err)
		if err == nil || !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '"+registration.AgentIsolationPolicyName+"'") ||
			!strings.Contains(err.Error(), "the agent of cluster "+cluster) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("the agent writing %s: error %v, want the isolation policy's saying %q", tt.name, err, tt.want)
		}
	}
	// A JSON merge patch replacing the list, dropping the other entry.
	patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"status":{"clusterVersions":[{"clusterName":%q,"version":"3"}]}}`, cluster))
	if err := agent.Status().Patch(ctx, got.DeepCopy(), patch); err == nil || !strings.Contains(err.Error(), "entries of cluster(s) other") {
		t.Errorf("the agent removing another cluster's entry: error %v, want the isolation policy's", err)
	}

	fc := &v1beta1.FederatedCluster{}
	if err := admin.Get(ctx, client.ObjectKey{Name: cluster}, fc); err != nil {
		t.Fatal(err)
	}
	fc.Labels["stolen"] = "yes"
	if err := agent.Update(ctx, fc); !apierrors.IsForbidden(err) {
		t.Errorf("the agent updating its FederatedCluster: error %v, want Forbidden", err)
	}
	if err := agent.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cpvNS, GenerateName: "agent-"}}); !apierrors.IsForbidden(err) {
		t.Errorf("the agent creating a ConfigMap on the host: error %v, want Forbidden", err)
	}
	if err := agent.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
		t.Errorf("the agent listing Secrets on the host: error %v, want Forbidden", err)
	}
	renewLease(ctx, t, agent)
}

// renewLease renews the agent's Lease as the agent.
func renewLease(ctx context.Context, t *testing.T, agent client.Client) {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := agent.Get(ctx, client.ObjectKey{Namespace: ns, Name: registration.AgentLeaseName(cluster)}, lease); err != nil {
		t.Fatalf("the agent reading its Lease: %v", err)
	}
	now := metav1.NewMicroTime(time.Now())
	lease.Spec.HolderIdentity, lease.Spec.RenewTime, lease.Spec.LeaseDurationSeconds = ptrTo("agent"), &now, ptrTo[int32](40)
	if err := agent.Update(ctx, lease); err != nil {
		t.Fatalf("the agent renewing its Lease: %v", err)
	}
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fedwarden-agent-other"}}
	if err := agent.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("the agent creating another Lease: error %v, want Forbidden", err)
	}
}

func ptrTo[T any](v T) *T { return &v }

func checkNotThere(ctx context.Context, t *testing.T, c client.Client, obj client.Object, key client.ObjectKey) {
	t.Helper()
	if err := c.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
		t.Errorf("%T %s: error %v, want NotFound", obj, key, err)
	}
}

// waitGone waits until the object is gone.
func waitGone(ctx context.Context, t *testing.T, c client.Client, obj client.Object, key client.ObjectKey) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "the object to be gone", poll.NoError(func(context.Context) error {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%T %s is still there (err %v)", obj, key, err)
	}))
}

// hostKubeconfig returns the host's kubeconfig the test bed's commands use.
func (tb *testBed) hostKubeconfig() string {
	return tb.flags[slices.Index(tb.flags, "--host-kubeconfig")+1]
}
