package e2e

import (
	"context"
	"encoding/json"
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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

const fedNamespace = corev1beta1.DefaultFederationNamespace

var joinBoth struct {
	once    sync.Once
	results map[string]result
}

// joinedMembers joins both members of the shared test bed, once for all
// tests, and returns what each join printed.
func joinedMembers(t *testing.T) map[string]result {
	t.Helper()
	joinBoth.once.Do(func() {
		joinBoth.results = map[string]result{}
		for i, m := range fed.Members {
			joinBoth.results[m.Name] = runFedwarden(t, memberJoinArgs(i, m)...)
		}
	})
	for name, r := range joinBoth.results {
		if r.code != 0 {
			t.Fatalf("joining %s failed:\n%s", name, r)
		}
	}
	return joinBoth.results
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
		// The health controller probes a new cluster at once: Ready comes
		// within two probe periods of the FederatedCluster's creation
		// (timestamps have one-second resolution).
		if took := ready.LastTransitionTime.Sub(fc.CreationTimestamp.Time); took > 2*probePeriod {
			t.Errorf("FederatedCluster %s became Ready %s after its creation, more than two probe periods (%s)", m.Name, took, 2*probePeriod)
		}
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
	endpoints := map[string]int{}
	for _, fc := range list.Items {
		endpoints[fc.Spec.APIEndpoint]++
	}
	if endpoints[m.Endpoint] != 1 {
		t.Errorf("%d FederatedClusters point at %s after a second join, want 1", endpoints[m.Endpoint], m.Endpoint)
	}
}

func TestJoinDryRunChangesNothing(t *testing.T) {
	t.Parallel()
	const name = "dry-run"
	m := fed.Members[1]
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
	t.Parallel()
	const name = "leaving"
	m := fed.Members[1]
	if r := runFedwarden(t, joinArgs(fed, m, name)...); r.code != 0 {
		t.Fatalf("join failed:\n%s", r)
	}
	host, member := hostClient(t), newClient(t, m.Config)
	for i := range 2 {
		r := runFedwarden(t, unjoinArgs(fed, m, name)...)
		if r.code != 0 {
			t.Fatalf("unjoin (run %d) failed:\n%s", i+1, r)
		}
		eventually(t, 30*time.Second, "both sides to be removed", func(context.Context) (bool, string) {
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
	// The member's other identities are untouched, and so is the namespace.
	ns := &corev1.Namespace{}
	if err := member.Get(t.Context(), types.NamespacedName{Name: fedNamespace}, ns); err != nil {
		t.Errorf("unjoin removed the member's namespace %s: %v", fedNamespace, err)
	}
}
