package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/migrate"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// kubefedServiceAccount is the member identity fedtest gives KubeFed: a
// cluster-admin ServiceAccount of kube-system, as `kubefedctl join` makes.
const kubefedServiceAccount = "system:serviceaccount:kube-system:kubefed-test"

// `fedwarden migrate kubefed --rejoin` gives Fedwarden its own
// least-privilege identity in each member, created as `fedwarden join`
// creates it: in cluster1 with KubeFed's token, in cluster2 with the
// context cluster2 of --member-kubeconfig. The dry run names what it
// would create and creates nothing; after the handover each
// FederatedCluster uses the token of Fedwarden's ServiceAccount, which
// cannot do what KubeFed's could; the copies are adopted with no write;
// a template change propagates with KubeFed's rights revoked; KubeFed's
// Secrets are untouched, and --rollback, which leaves Fedwarden's
// identity in place, gives KubeFed back a federation it drives.
func TestMigrateFromKubeFedRejoin(t *testing.T) {
	t.Parallel()
	skipInShortMode(t)
	k := startKubeFedBed(t)
	bed, kubefedTokens, dir, members, host := k.bed, k.tokens, k.dir, k.members, k.host
	// The kubeconfig of cluster2 has one context, named cluster2: cluster1
	// has none there, so its identity is created with KubeFed's token.
	rejoinArgs := []string{"--rejoin", "--member-kubeconfig", bed.Members[1].Kubeconfig, "--host-kubeconfig", bed.Host.Kubeconfig}

	// The dry run names what it would create, and creates nothing.
	before := hostFingerprint(t, bed.Host.Config)
	plan := dryRunRejoin(t, rejoinArgs, kubefedTokens)
	if diff := fingerprintDiff(before, hostFingerprint(t, bed.Host.Config)); diff != "" {
		t.Fatalf("the dry run changed the host: %s", diff)
	}
	for i, m := range members {
		checkNoFedwardenIdentity(t, m, fmt.Sprintf("cluster%d", i+1))
	}

	k.stopKubeFed()
	kubectl(t, bed.Members[0].Kubeconfig, "-n", "test-namespace", "patch", "configmap", "test-configmap", "--type=merge", "-p", `{"data":{"A":"edited by hand"}}`)
	copiesBefore := memberFingerprints(t, members)
	kubefedSecrets := kubefedSecretVersions(t, host)

	r := runFedwarden(t, append([]string{"migrate", "kubefed", "--stop-timeout", "2m"}, rejoinArgs...)...)
	if r.code != 0 {
		t.Fatalf("the migration failed:\n%s", r)
	}
	t.Logf("migrate kubefed --rejoin:\n%s", r)
	digest := handoverDigest(t, r.stdout)
	checkNoMemberToken(t, "the migration", r.stdout+r.stderr, kubefedTokens)
	for _, want := range []string{
		"cluster1: created ServiceAccount kube-federation-system/fedwarden-cluster1 on the member",
		"cluster2: created ClusterRoleBinding fedwarden:member:cluster2 on the member",
		"created Fedwarden's identity in cluster cluster1 (ServiceAccount kube-federation-system/fedwarden-cluster1) through KubeFed's identity",
		"created Fedwarden's identity in cluster cluster2 (ServiceAccount kube-federation-system/fedwarden-cluster2) through the credentials of context cluster2",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the migration does not say %q", want)
		}
	}
	for i, m := range members {
		name := fmt.Sprintf("cluster%d", i+1)
		token := checkRejoined(t, host, m, name)
		checkNoTokenIn(t, "the migration", r.stdout+r.stderr, token)
	}
	if diff := fingerprintDiff(kubefedSecrets, kubefedSecretVersions(t, host)); diff != "" {
		t.Errorf("the migration changed KubeFed's Secrets: %s", diff)
	}

	cm := adoptingControllerManager(t, bed, dir, plan.ControllerManagerArgs)
	waitForAdoption(t, host, false)
	if diff := fingerprintDiff(copiesBefore, memberFingerprints(t, members)); diff != "" {
		t.Errorf("adopting KubeFed's copies wrote to the members: %s", diff)
	}
	waitForAdoption(t, host, true)
	checkHandEditKept(t, members[0])

	// With KubeFed's rights revoked in the members, a template change still
	// propagates: Fedwarden writes with its own identity.
	for _, m := range bed.Members {
		kubectl(t, m.Kubeconfig, "delete", "clusterrolebinding", "kubefed-test")
	}
	changeTemplate(t, bed, members)
	for _, m := range bed.Members {
		kubectl(t, m.Kubeconfig, "create", "clusterrolebinding", "kubefed-test", "--clusterrole", "cluster-admin", "--serviceaccount", "kube-system:kubefed-test")
	}

	// Rollback: Fedwarden's identity stays; KubeFed, with its own, drives.
	if err := cm.stop(); err != nil {
		t.Error(err)
	}
	r = runFedwarden(t, "migrate", "kubefed", "--rollback", "--state-digest", digest, "--host-kubeconfig", bed.Host.Kubeconfig)
	if r.code != 0 {
		t.Fatalf("the rollback failed:\n%s", r)
	}
	t.Logf("migrate kubefed --rollback:\n%s", r)
	if !strings.Contains(r.stderr, "left Fedwarden's identity in cluster cluster1 (ServiceAccount kube-federation-system/fedwarden-cluster1") {
		t.Errorf("the rollback does not say that it left Fedwarden's identity in the members")
	}
	checkRolledBack(t, host)
	for i, m := range members {
		sa := &corev1.ServiceAccount{}
		name := registration.ServiceAccountName(fmt.Sprintf("cluster%d", i+1))
		if err := newClient(t, m).Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: name}, sa); err != nil {
			t.Errorf("Fedwarden's ServiceAccount %s after the rollback: %v", name, err)
		}
	}
	if diff := fingerprintDiff(kubefedSecrets, kubefedSecretVersions(t, host)); diff != "" {
		t.Errorf("KubeFed's Secrets changed by the end: %s", diff)
	}
	k.startKubeFed(t)
	kubectl(t, bed.Host.Kubeconfig, "-n", "test-namespace", "patch", "federatedconfigmap", "test-configmap", "--type=merge", "-p", `{"spec":{"template":{"data":{"A":"from kubefed"}}}}`)
	// sample1 overrides cluster2's data: the change shows in cluster1.
	mc := newClient(t, members[0])
	poll.Eventually(t, 2*time.Minute, "KubeFed, back, to propagate a template change to cluster1", func(ctx context.Context) (bool, string) {
		c := &corev1.ConfigMap{}
		if err := mc.Get(ctx, types.NamespacedName{Namespace: "test-namespace", Name: "test-configmap"}, c); err != nil {
			return false, err.Error()
		}
		return c.Data["A"] == "from kubefed", fmt.Sprint(c.Data)
	})
}

// dryRunRejoin runs the dry run with --rejoin, as text and as JSON, checks
// that it names what it would create in each member and on the host, and
// returns the plan.
func dryRunRejoin(t *testing.T, args []string, tokens map[string]string) *migrate.Plan {
	t.Helper()
	r := runFedwarden(t, append([]string{"migrate", "kubefed", "--dry-run"}, args...)...)
	if r.code != 0 {
		t.Fatalf("the dry run failed:\n%s", r)
	}
	t.Logf("migrate kubefed --rejoin --dry-run:\n%s", r.stdout)
	checkNoMemberToken(t, "the dry run", r.stdout+r.stderr, tokens)
	for _, want := range []string{
		"Fedwarden's identity in member cluster1", "Namespace kube-federation-system, ServiceAccount kube-federation-system/fedwarden-cluster1, " +
			"Secret kube-federation-system/fedwarden-cluster1-token, ClusterRole fedwarden:member:cluster1, ClusterRoleBinding fedwarden:member:cluster1",
		"through KubeFed's identity (the token of Secret kube-federation-system/cluster1-token)",
		"Fedwarden's identity in member cluster2", "ServiceAccount kube-federation-system/fedwarden-cluster2,",
		"through the credentials of context cluster2 of " + args[2],
		"Secret kube-federation-system/fedwarden-cluster1-credentials", "Secret fedwarden-cluster2-credentials (Fedwarden's identity; KubeFed's Secret cluster2-token",
		"--rollback leaves Fedwarden's identity in the members",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run does not say %q", want)
		}
	}
	if strings.Contains(r.stdout, "annotate  Secret") {
		t.Error("the dry run with --rejoin plans to annotate KubeFed's Secrets")
	}
	r = runFedwarden(t, append([]string{"migrate", "kubefed", "--dry-run", "-o", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("the dry run -o json failed:\n%s", r)
	}
	plan := &migrate.Plan{}
	if err := json.Unmarshal([]byte(r.stdout), plan); err != nil {
		t.Fatalf("the dry run's JSON: %v\n%s", err, r.stdout)
	}
	if !plan.Rejoin || len(plan.Blockers) > 0 || len(plan.Inventory.Clusters) != 2 {
		t.Fatalf("the plan: rejoin %v, %d blockers %v, %d clusters", plan.Rejoin, len(plan.Blockers), plan.Blockers, len(plan.Inventory.Clusters))
	}
	return plan
}

// checkNoFedwardenIdentity checks that the member has no ServiceAccount of
// Fedwarden's for cluster.
func checkNoFedwardenIdentity(t *testing.T, member *rest.Config, cluster string) {
	t.Helper()
	sa := &corev1.ServiceAccount{}
	err := newClient(t, member).Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: registration.ServiceAccountName(cluster)}, sa)
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s has Fedwarden's ServiceAccount before the migration (%v)", cluster, err)
	}
}

// kubefedSecretVersions fingerprints KubeFed's cluster Secrets on the host.
func kubefedSecretVersions(t *testing.T, host client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"cluster1-token", "cluster2-token"} {
		s := &corev1.Secret{}
		if err := host.Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: name}, s); err != nil {
			t.Fatal(err)
		}
		out[name] = s.ResourceVersion + fmt.Sprint(s.Annotations)
	}
	return out
}

// checkRejoined checks that FederatedCluster name uses Fedwarden's own
// credentials Secret, bound and owned as join makes it, whose token is
// that of Fedwarden's ServiceAccount in the member, with rights
// KubeFed's has and it has not. It returns the token.
func checkRejoined(t *testing.T, host client.Client, member *rest.Config, name string) string {
	t.Helper()
	fc := &corev1beta1.FederatedCluster{}
	if err := host.Get(t.Context(), types.NamespacedName{Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	want := registration.CredentialsSecretName(name)
	if fc.Spec.SecretRef == nil || fc.Spec.SecretRef.Name != want {
		t.Fatalf("FederatedCluster %s uses Secret %v, want %s", name, fc.Spec.SecretRef, want)
	}
	secret := &corev1.Secret{}
	if err := host.Get(t.Context(), types.NamespacedName{Namespace: fedtest.KubeFedNamespace, Name: want}, secret); err != nil {
		t.Fatal(err)
	}
	if secret.Annotations[corev1beta1.AnnotationCredentialsCluster] != name || secret.Annotations[corev1beta1.AnnotationCredentialsEndpoint] != fc.Spec.APIEndpoint {
		t.Errorf("Secret %s is not bound to cluster %s: %v", want, name, secret.Annotations)
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].Kind != "FederatedCluster" || refs[0].UID != fc.UID {
		t.Errorf("Secret %s is not owned by FederatedCluster %s: %v", want, name, refs)
	}
	token := string(secret.Data[corev1beta1.SecretTokenKey])
	kube, err := kubernetes.NewForConfig(member)
	if err != nil {
		t.Fatal(err)
	}
	review, err := kube.AuthenticationV1().TokenReviews().Create(t.Context(), &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + fedtest.KubeFedNamespace + ":" + registration.ServiceAccountName(name)
	if !review.Status.Authenticated || review.Status.User.Username != user {
		t.Fatalf("the token of Secret %s authenticates in %s as %q (authenticated %v), want %s", want, name, review.Status.User.Username, review.Status.Authenticated, user)
	}
	checks := []struct {
		what string
		attr authorizationv1.ResourceAttributes
		ours bool // whether Fedwarden's identity may
	}{
		{"list configmaps", authorizationv1.ResourceAttributes{Verb: "list", Resource: "configmaps"}, true},
		{"patch deployments", authorizationv1.ResourceAttributes{Verb: "patch", Group: "apps", Resource: "deployments", Namespace: "test-namespace"}, true},
		{"mint tokens in kube-system", authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "kube-system"}, false},
		{"exec into pods", authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "kube-system"}, false},
		{"impersonate users", authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users"}, false},
		{"bind clusterroles", authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, false},
		{"escalate clusterroles", authorizationv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, false},
		{"reach nodes through the API server's proxy", authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}, false},
		{"deletecollection secrets", authorizationv1.ResourceAttributes{Verb: "deletecollection", Resource: "secrets", Namespace: "kube-system"}, false},
	}
	for _, c := range checks {
		if got := allowed(t, kube, user, review.Status.User.Groups, c.attr); got != c.ours {
			t.Errorf("in %s, Fedwarden's identity may %s: %v, want %v", name, c.what, got, c.ours)
		}
		if !allowed(t, kube, kubefedServiceAccount, []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, c.attr) {
			t.Errorf("in %s, KubeFed's identity may not %s: the check proves nothing", name, c.what)
		}
	}
	return token
}

// allowed asks the member whether user, in groups, may do attr.
func allowed(t *testing.T, kube kubernetes.Interface, user string, groups []string, attr authorizationv1.ResourceAttributes) bool {
	t.Helper()
	review, err := kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups, ResourceAttributes: &attr},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.Allowed
}
