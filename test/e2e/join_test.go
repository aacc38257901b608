package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/config/crd"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

const fedNamespace = corev1beta1.DefaultFederationNamespace

// joinBoth joins both members of the shared test bed, once for all tests,
// and returns what each join printed, and why they are not both joined.
// Every test that calls joinedMembers fails on that error, not only the
// first: none may run on a half-joined bed.
var joinBoth = sync.OnceValues(func() (map[string]result, error) {
	results := map[string]result{}
	var errs []error
	for i, m := range fed.Members {
		// Not a test's context: the joins outlive the test that asks first.
		// join's own --timeout bounds them.
		r, err := fedtest.Run(context.Background(), fedwardenBin, memberJoinArgs(i, m)...)
		results[m.Name] = result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("joining %s: %w", m.Name, err))
		case r.Code != 0:
			errs = append(errs, fmt.Errorf("joining %s failed:\n%s", m.Name, results[m.Name]))
		}
	}
	return results, errors.Join(errs...)
})

// joinedMembers joins both members of the shared test bed, once for all
// tests, and returns what each join printed; it fails the test if they are
// not both joined.
func joinedMembers(t *testing.T) map[string]result {
	t.Helper()
	skipInShortMode(t)
	results, err := joinBoth()
	if err != nil {
		t.Fatalf("the shared test bed's members are not joined: %v", err)
	}
	return results
}

// memberJoinArgs are the arguments the shared test bed joins member i with.
func memberJoinArgs(i int, m *localfed.Cluster) []string {
	return joinArgs(fed, m, m.Name, "--region", fmt.Sprintf("region-%d", i+1), "--zone", "zone-a", "--label", "tier=gold")
}

// memberObjects are the objects join creates in a member for cluster name.
func memberObjects(name string) []client.Object {
	return []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: "fedwarden-" + name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: "fedwarden-" + name + "-token"}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "fedwarden:member:" + name}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fedwarden:member:" + name}},
	}
}

// hostObjects are the objects join creates in the host for cluster name.
func hostObjects(name string) []client.Object {
	return []client.Object{
		&corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: "fedwarden-" + name + "-credentials"}},
	}
}

// resourceVersions reads objs and returns their resourceVersions by
// kind/name; absent objects are reported as "absent".
func resourceVersions(t *testing.T, c client.Client, objs []client.Object) map[string]string {
	t.Helper()
	rvs := map[string]string{}
	for _, obj := range objs {
		key := fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj)
		switch {
		case apierrors.IsNotFound(err):
			rvs[key] = "absent"
		case err != nil:
			t.Fatalf("reading %s: %v", key, err)
		default:
			rvs[key] = obj.GetResourceVersion()
		}
	}
	return rvs
}

func TestJoinMakesMembersReady(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	results := joinedMembers(t)
	host := hostClient(t)
	for i, m := range fed.Members {
		fc := &corev1beta1.FederatedCluster{}
		if err := host.Get(t.Context(), types.NamespacedName{Name: m.Name}, fc); err != nil {
			t.Fatalf("reading FederatedCluster %s: %v", m.Name, err)
		}
		if fc.Spec.APIEndpoint != m.Endpoint || string(fc.Spec.CABundle) != string(m.CAData) ||
			fc.Spec.SyncMode != corev1beta1.SyncModePush || fc.Spec.SecretRef == nil ||
			fc.Spec.SecretRef.Name != "fedwarden-"+m.Name+"-credentials" || fc.Spec.Region != fmt.Sprintf("region-%d", i+1) ||
			!slices.Equal(fc.Spec.Zones, []corev1beta1.Zone{"zone-a"}) {
			t.Errorf("FederatedCluster %s spec = %+v", m.Name, fc.Spec)
		}
		for k, v := range map[string]string{corev1beta1.LabelRegion: fmt.Sprintf("region-%d", i+1), corev1beta1.LabelZone: "zone-a", "tier": "gold"} {
			if fc.Labels[k] != v {
				t.Errorf("FederatedCluster %s: label %s = %q, want %q", m.Name, k, fc.Labels[k], v)
			}
		}
		ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
		if ready == nil || ready.Status != metav1.ConditionTrue {
			t.Fatalf("FederatedCluster %s: Ready = %+v after join returned", m.Name, ready)
		}
		// That Ready came from a first probe made at once, not after a
		// probe period, TestJoinProbesNewClusterAtOnce shows.
		if fc.Status.KubernetesVersion != "v1.37.2" {
			t.Errorf("FederatedCluster %s: kubernetesVersion = %q, want v1.37.2", m.Name, fc.Status.KubernetesVersion)
		}
		for _, c := range []string{corev1beta1.ClusterOffline, corev1beta1.ClusterConfigMalformed} {
			if !meta.IsStatusConditionFalse(fc.Status.Conditions, c) {
				t.Errorf("FederatedCluster %s: condition %s is not False: %+v", m.Name, c, fc.Status.Conditions)
			}
		}
		checkMemberSide(t, m, m.Name)
		checkNoToken(t, host, m.Name, results[m.Name].stdout+results[m.Name].stderr)
	}
}

// The health controller probes a new cluster at once, not a probe period
// after its creation: with a period of ten minutes, longer than join waits
// for Ready, join returns a Ready cluster. This test needs a controller-
// manager with a probe period of its own, so it has a test bed of its own.
func TestJoinProbesNewClusterAtOnce(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(1), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	probes := probeSettings{period: 10 * time.Minute, timeout: 10 * time.Second, failureThreshold: 3}
	const joinTimeout = 2 * time.Minute
	startControllerManager(t, bed, probes)
	m := bed.Fed.Members[0]
	if r := runFedwarden(t, joinArgs(bed.Fed, m, m.Name, "--timeout", joinTimeout.String())...); r.code != 0 {
		t.Fatalf("join did not see %s Ready within %s, with a probe period of %s:\n%s", m.Name, joinTimeout, probes.period, r)
	}
	fc := &corev1beta1.FederatedCluster{}
	if err := bed.Host.Get(t.Context(), types.NamespacedName{Name: m.Name}, fc); err != nil {
		t.Fatalf("reading FederatedCluster %s: %v", m.Name, err)
	}
	ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.Reason != corev1beta1.ReasonClusterReady || fc.Status.KubernetesVersion == "" {
		t.Fatalf("FederatedCluster %s after join: Ready = %+v, kubernetesVersion %q; want Ready from a probe", m.Name, ready, fc.Status.KubernetesVersion)
	}
	if took := ready.LastTransitionTime.Sub(fc.CreationTimestamp.Time); took >= probes.period {
		t.Errorf("FederatedCluster %s became Ready %s after its creation, not before the first probe period (%s) ended", m.Name, took, probes.period)
	}
}

// checkMemberSide checks the identity join made in member m for cluster
// name: a ServiceAccount with a long-lived token, bound to a ClusterRole of
// its own, with the rights propagation needs and no more.
func checkMemberSide(t *testing.T, m *localfed.Cluster, name string) {
	t.Helper()
	mc := newClient(t, m.Config)
	secret := &corev1.Secret{}
	if err := mc.Get(t.Context(), types.NamespacedName{Namespace: fedNamespace, Name: "fedwarden-" + name + "-token"}, secret); err != nil {
		t.Fatalf("member %s: reading the token Secret: %v", m.Name, err)
	}
	if secret.Type != corev1.SecretTypeServiceAccountToken || secret.Annotations[corev1.ServiceAccountNameKey] != "fedwarden-"+name || len(secret.Data[corev1.ServiceAccountTokenKey]) == 0 {
		t.Errorf("member %s: token Secret has type %s, annotations %v and %d token bytes", m.Name, secret.Type, secret.Annotations, len(secret.Data[corev1.ServiceAccountTokenKey]))
	}
	crb := &rbacv1.ClusterRoleBinding{}
	if err := mc.Get(t.Context(), types.NamespacedName{Name: "fedwarden:member:" + name}, crb); err != nil {
		t.Fatalf("member %s: reading the ClusterRoleBinding: %v", m.Name, err)
	}
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: "fedwarden-" + name, Namespace: fedNamespace}
	if crb.RoleRef.Name != "fedwarden:member:"+name || len(crb.Subjects) != 1 || crb.Subjects[0] != wantSubject {
		t.Errorf("member %s: ClusterRoleBinding binds %v to %s", m.Name, crb.Subjects, crb.RoleRef.Name)
	}
	user := "system:serviceaccount:" + fedNamespace + ":fedwarden-" + name
	for _, tc := range []struct {
		attrs authorizationv1.ResourceAttributes
		want  bool
	}{
		{authorizationv1.ResourceAttributes{Verb: "create", Group: "apps", Resource: "deployments", Namespace: "any"}, true},
		{authorizationv1.ResourceAttributes{Verb: "watch", Group: "apps", Resource: "deployments"}, true},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "namespaces"}, true},
		{authorizationv1.ResourceAttributes{Verb: "list", Resource: "nodes"}, true},
		{authorizationv1.ResourceAttributes{Verb: "escalate", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, false},
		{authorizationv1.ResourceAttributes{Verb: "bind", Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}, false},
		{authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users"}, false},
		{authorizationv1.ResourceAttributes{Verb: "deletecollection", Resource: "configmaps", Namespace: "any"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "any"}, true},
		// Subresources would let the host act as others in the member.
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "serviceaccounts", Subresource: "token", Namespace: "kube-system"}, false},
		{authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Subresource: "exec", Namespace: "any"}, false},
		{authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy"}, false},
	} {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"}, ResourceAttributes: &tc.attrs,
		}}
		if err := mc.Create(t.Context(), sar); err != nil {
			t.Fatalf("member %s: SubjectAccessReview: %v", m.Name, err)
		}
		if sar.Status.Allowed != tc.want {
			t.Errorf("member %s: %s may %s %s/%s.%s: %v, want %v", m.Name, user, tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource, tc.attrs.Group, sar.Status.Allowed, tc.want)
		}
	}
}

// checkNoToken fails if output holds the token stored for cluster name.
func checkNoToken(t *testing.T, host client.Client, name, output string) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := host.Get(t.Context(), types.NamespacedName{Namespace: fedNamespace, Name: "fedwarden-" + name + "-credentials"}, secret); err != nil {
		t.Fatalf("reading the credentials Secret of %s: %v", name, err)
	}
	token := string(secret.Data[corev1beta1.SecretTokenKey])
	if len(token) < 20 {
		t.Fatalf("the credentials Secret of %s holds no token (%d bytes)", name, len(token))
	}
	if strings.Contains(output, token) || strings.Contains(output, token[len(token)-16:]) {
		t.Errorf("the output of join for %s shows the token", name)
	}
}

func TestRejoinChangesNothing(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	joinedMembers(t)
	m := fed.Members[0]
	host, member := hostClient(t), newClient(t, m.Config)
	before := [2]map[string]string{resourceVersions(t, host, hostObjects(m.Name)), resourceVersions(t, member, memberObjects(m.Name))}
	r := runFedwarden(t, memberJoinArgs(0, m)...)
	if r.code != 0 {
		t.Fatalf("joining %s again failed:\n%s", m.Name, r)
	}
	after := [2]map[string]string{resourceVersions(t, host, hostObjects(m.Name)), resourceVersions(t, member, memberObjects(m.Name))}
	for side := range before {
		for key, rv := range before[side] {
			if after[side][key] != rv {
				t.Errorf("joining again changed %s: resourceVersion %s → %s", key, rv, after[side][key])
			}
		}
	}
	var list corev1beta1.FederatedClusterList
	if err := host.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	// Only those join made (labelled with their cluster): other tests
	// create FederatedClusters at this endpoint by hand, with bad settings.
	endpoints := map[string]int{}
	for _, fc := range list.Items {
		if _, joined := fc.Labels[corev1beta1.LabelCluster]; joined {
			endpoints[fc.Spec.APIEndpoint]++
		}
	}
	if endpoints[m.Endpoint] != 1 {
		t.Errorf("%d FederatedClusters made by join point at %s after a second join, want 1", endpoints[m.Endpoint], m.Endpoint)
	}
}

func TestJoinDryRunChangesNothing(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	const name = "dry-run"
	m := ownMember(t, name)
	wantKinds := []string{"ClusterRole", "ClusterRoleBinding", "FederatedCluster", "Namespace", "Namespace", "Secret", "Secret", "ServiceAccount"}
	for _, format := range []string{"yaml", "json"} {
		r := runFedwarden(t, joinArgs(fed, m, name, "--dry-run", "-o", format)...)
		if r.code != 0 {
			t.Fatalf("join --dry-run -o %s failed:\n%s", format, r)
		}
		kinds := printedKinds(t, format, r.stdout)
		slices.Sort(kinds)
		if !slices.Equal(kinds, wantKinds) {
			t.Errorf("join --dry-run -o %s printed kinds %v, want %v", format, kinds, wantKinds)
		}
	}
	host, member := hostClient(t), newClient(t, m.Config)
	for _, side := range []map[string]string{resourceVersions(t, host, hostObjects(name)), resourceVersions(t, member, memberObjects(name))} {
		for key, rv := range side {
			if rv != "absent" {
				t.Errorf("join --dry-run created %s", key)
			}
		}
	}
}

// printedKinds returns the kinds of the objects in a YAML stream or a JSON List.
func printedKinds(t *testing.T, format, out string) []string {
	t.Helper()
	var kinds []string
	type object struct {
		Kind string `json:"kind"`
	}
	if format == "json" {
		var list struct {
			Kind  string   `json:"kind"`
			Items []object `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil || list.Kind != "List" {
			t.Fatalf("join --dry-run -o json did not print a List (%v):\n%s", err, out)
		}
		for _, o := range list.Items {
			kinds = append(kinds, o.Kind)
		}
		return kinds
	}
	for _, doc := range strings.Split(out, "\n---\n") {
		var o object
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("join --dry-run -o yaml printed a document that is not YAML (%v):\n%s", err, doc)
		}
		if o.Kind != "" {
			kinds = append(kinds, o.Kind)
		}
	}
	return kinds
}

func TestUnjoinRemovesBothSides(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	const name, other = "leaving", "staying"
	m := ownMember(t, name)
	host, member := hostClient(t), newClient(t, m.Config)
	// The member is also joined, as other, to the host of another
	// federation (one host refuses a second name of a cluster): that
	// identity, and the namespace they share, must survive this one's
	// unjoin.
	otherHost := federationHost(t, name+"-host")
	if r := runFedwarden(t, "join", other, "--host-kubeconfig", otherHost.Kubeconfig, "--cluster-kubeconfig", m.Kubeconfig, "--wait=false"); r.code != 0 {
		t.Fatalf("joining %s to the other host failed:\n%s", other, r)
	}
	otherHostClient := newClient(t, otherHost.Config)
	ns := &corev1.Namespace{}
	if err := member.Get(t.Context(), types.NamespacedName{Name: fedNamespace}, ns); err != nil {
		t.Fatal(err)
	}
	before := identity(t, otherHostClient, member, other)
	if r := runFedwarden(t, joinArgs(fed, m, name)...); r.code != 0 {
		t.Fatalf("join failed:\n%s", r)
	}
	for i := range 2 {
		r := runFedwarden(t, unjoinArgs(fed, m, name)...)
		if r.code != 0 {
			t.Fatalf("unjoin (run %d) failed:\n%s", i+1, r)
		}
		poll.Eventually(t, 30*time.Second, "both sides to be removed", func(context.Context) (bool, string) {
			var left []string
			for _, side := range []map[string]string{resourceVersions(t, host, hostObjects(name)), resourceVersions(t, member, memberObjects(name))} {
				for key, rv := range side {
					if rv != "absent" {
						left = append(left, key)
					}
				}
			}
			return len(left) == 0, fmt.Sprint("still there: ", left)
		})
	}
	// The member's other identity is untouched: the same objects (UIDs)
	// with the same contents, on both sides, and it still works: the
	// member accepts the token the other host holds.
	after := identity(t, otherHostClient, member, other)
	for key, was := range before {
		if after[key] != was {
			t.Errorf("unjoining %s changed %s of the identity of %s:\nbefore: %s\nafter:  %s", name, key, other, was, after[key])
		}
	}
	checkMemberSide(t, m, other)
	otherIdentity := newClient(t, &rest.Config{Host: m.Endpoint, BearerToken: credentialsTokenOf(t, otherHostClient, other),
		TLSClientConfig: rest.TLSClientConfig{CAData: m.CAData}})
	if err := otherIdentity.List(t.Context(), &corev1.NodeList{}); err != nil {
		t.Errorf("the identity of %s, after %s was unjoined from the same member: %v", other, name, err)
	}
	nsAfter := &corev1.Namespace{}
	if err := member.Get(t.Context(), types.NamespacedName{Name: fedNamespace}, nsAfter); err != nil || nsAfter.UID != ns.UID || nsAfter.DeletionTimestamp != nil {
		t.Errorf("unjoin removed or replaced the member's namespace %s: UID %s → %s, deleting since %v (%v)", fedNamespace, ns.UID, nsAfter.UID, nsAfter.DeletionTimestamp, err)
	}
}

// federationHost starts an API server of the test's own, as ownMember
// does, with Fedwarden's CRDs: the host of another federation, where no
// controller-manager works, to join a member to.
func federationHost(t *testing.T, name string) *localfed.Cluster {
	t.Helper()
	h := ownMember(t, name)
	c := newClient(t, h.Config)
	crds, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range crds {
		if err := c.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating CRD %s in %s: %v", obj.Name, name, err)
		}
	}
	poll.Eventually(t, loadSlack, "FederatedClusters to be served by "+name, func(ctx context.Context) (bool, string) {
		err := c.List(ctx, &corev1beta1.FederatedClusterList{})
		return err == nil, fmt.Sprint(err)
	})
	return h
}

// identity describes the objects join made for cluster name, on the host
// and in the member: each object's UID and what it says (a digest of the
// token, not the token), by kind and name.
func identity(t *testing.T, host, member client.Client, name string) map[string]string {
	t.Helper()
	digest := func(b []byte) string { return fmt.Sprintf("sha256:%x", sha256.Sum256(b)) }
	out := map[string]string{}
	for _, side := range []struct {
		c    client.Client
		objs []client.Object
	}{{host, hostObjects(name)}, {member, memberObjects(name)}} {
		for _, obj := range side.objs {
			key := fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj))
			if err := side.c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatalf("reading %s: %v", key, err)
			}
			var says string
			switch o := obj.(type) {
			case *corev1beta1.FederatedCluster:
				spec, err := json.Marshal(o.Spec)
				if err != nil {
					t.Fatal(err)
				}
				says = fmt.Sprintf("generation %d, spec %s", o.Generation, spec)
			case *corev1.Secret:
				says = fmt.Sprintf("type %s, service account %q, token %s", o.Type, o.Annotations[corev1.ServiceAccountNameKey], digest(append(o.Data[corev1.ServiceAccountTokenKey], o.Data[corev1beta1.SecretTokenKey]...)))
			case *corev1.ServiceAccount:
				says = fmt.Sprintf("labels %v", o.Labels)
			case *rbacv1.ClusterRole:
				says = fmt.Sprintf("rules %+v", o.Rules)
			case *rbacv1.ClusterRoleBinding:
				says = fmt.Sprintf("role %+v, subjects %+v", o.RoleRef, o.Subjects)
			}
			out[key] = fmt.Sprintf("UID %s, deleting: %t, %s", obj.GetUID(), obj.GetDeletionTimestamp() != nil, says)
		}
	}
	return out
}
