package e2e

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// rogueServer is an HTTPS server on loopback that answers every request as
// a healthy API server would, and records what it was sent.
type rogueServer struct {
	*httptest.Server
	// CA is the PEM of the certificate it serves, which is its own CA.
	CA []byte

	mu       sync.Mutex
	requests []rogueRequest
}

// rogueRequest is one request the rogue server received.
type rogueRequest struct {
	path, authorization string
}

func newRogueServer(t *testing.T) *rogueServer {
	t.Helper()
	r := &rogueServer{}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, rogueRequest{path: req.URL.Path, authorization: req.Header.Get("Authorization")})
		r.mu.Unlock()
		if req.URL.Path == "/version" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"gitVersion":"v1.37.2-rogue"}`)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(r.Close)
	r.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
	return r
}

// received returns the requests received so far.
func (r *rogueServer) received() []rogueRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]rogueRequest(nil), r.requests...)
}

// checkNeverContacted fails the test, at once, if the rogue server received
// any request; the failure names the cluster whose token (tokens, by
// cluster) the request carried, if any.
func (r *rogueServer) checkNeverContacted(t *testing.T, tokens map[string]string) {
	t.Helper()
	for _, req := range r.received() {
		for cluster, token := range tokens {
			if req.authorization == "Bearer "+token {
				t.Fatalf("the rogue server at %s received the token of cluster %s on %s", r.URL, cluster, req.path)
			}
		}
		t.Fatalf("the rogue server at %s was contacted (%s, Authorization header set: %t); no request may go there",
			r.URL, req.path, req.authorization != "")
	}
}

// federatedClusterEditor returns a client of the host as a user who may read and patch
// FederatedClusters and has no right on Secrets.
func federatedClusterEditor(t *testing.T, host client.Client) client.Client {
	t.Helper()
	const user = "e2e-federatedcluster-editor"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{corev1beta1.GroupVersion.Group}, Resources: []string{"federatedclusters"},
			Verbs: []string{"get", "list", "watch", "patch", "update"},
		}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := host.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = host.Delete(context.Background(), obj) })
	}
	cfg, err := fed.Host.ConfigForUser(user)
	if err != nil {
		t.Fatal(err)
	}
	editor := newClient(t, cfg)
	poll.Eventually(t, loadSlack, user+" may read FederatedClusters", func(ctx context.Context) (bool, string) {
		err := editor.List(ctx, &corev1beta1.FederatedClusterList{})
		return err == nil, fmt.Sprint(err)
	})
	secret := &corev1.Secret{}
	if err := editor.Get(t.Context(), types.NamespacedName{Namespace: fedNamespace, Name: "any"}, secret); !apierrors.IsForbidden(err) {
		t.Fatalf("%s reading a Secret of %s: err = %v, want Forbidden", user, fedNamespace, err)
	}
	return editor
}

// credentialsTokenOf returns the token the host keeps for cluster name.
func credentialsTokenOf(t *testing.T, host client.Client, name string) string {
	t.Helper()
	secret := &corev1.Secret{}
	if err := host.Get(t.Context(), types.NamespacedName{Namespace: fedNamespace, Name: "fedwarden-" + name + "-credentials"}, secret); err != nil {
		t.Fatal(err)
	}
	return string(secret.Data[corev1beta1.SecretTokenKey])
}

// patchClusterSpecAs patches the spec of FederatedCluster name as c, and
// returns the generation the patch made.
func patchClusterSpecAs(t *testing.T, c client.Client, name string, change func(*corev1beta1.FederatedClusterSpec)) int64 {
	t.Helper()
	fc := &corev1beta1.FederatedCluster{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	before := fc.DeepCopy()
	change(&fc.Spec)
	if err := c.Patch(t.Context(), fc, client.MergeFrom(before)); err != nil {
		t.Fatalf("patching FederatedCluster %s: %v", name, err)
	}
	return fc.Generation
}

// waitForClusterConditionAt waits until condition typ of FederatedCluster
// name, as written for generation or a later one, has status and reason,
// checking all along that the rogue server is never contacted; it returns
// the condition.
func waitForClusterConditionAt(t *testing.T, c client.Client, rogue *rogueServer, tokens map[string]string, name string, generation int64,
	typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	poll.Eventually(t, cm.probes.probesWithin(1), fmt.Sprintf("%s: %s=%s (%s) for generation %d", name, typ, status, reason, generation), func(ctx context.Context) (bool, string) {
		rogue.checkNeverContacted(t, tokens)
		fc := &corev1beta1.FederatedCluster{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, fc); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(fc.Status.Conditions, typ)
		if cond == nil {
			return false, "no condition " + typ
		}
		got = *cond
		return cond.ObservedGeneration >= generation && cond.Status == status && cond.Reason == reason, fmt.Sprintf("%+v", *cond)
	})
	return got
}

// Credentials cannot be redirected: a user who may edit FederatedClusters,
// but not Secrets, points a joined cluster at an HTTPS server of their own
// on loopback, with its CA, and at another cluster's credentials Secret, or
// only at their server with the cluster's own Secret. The controller says
// why it refuses, in the conditions and an Event, and the rogue server never
// receives a request, let alone a token, until the cluster is set back and
// Ready again.
func TestCredentialsCannotBeRedirected(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	const cluster1, cluster2 = "creds-1", "creds-2"
	joinOwnMember(t, cluster1)
	joinOwnMember(t, cluster2)
	for _, name := range []string{cluster1, cluster2} {
		waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, cm.probes.probesWithin(1))
	}
	tokens := map[string]string{cluster1: credentialsTokenOf(t, host, cluster1), cluster2: credentialsTokenOf(t, host, cluster2)}
	editor := federatedClusterEditor(t, host)
	original := &corev1beta1.FederatedCluster{}
	if err := host.Get(t.Context(), types.NamespacedName{Name: cluster1}, original); err != nil {
		t.Fatal(err)
	}
	restore := func(t *testing.T, rogue *rogueServer, name string, spec corev1beta1.FederatedClusterSpec) {
		t.Helper()
		if t.Failed() {
			return
		}
		gen := patchClusterSpecAs(t, editor, name, func(s *corev1beta1.FederatedClusterSpec) { *s = spec })
		// The controller has seen every change up to the restored one:
		// any request the redirection caused is behind us.
		waitForClusterConditionAt(t, host, rogue, tokens, name, gen, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady)
		rogue.checkNeverContacted(t, tokens)
	}

	t.Run("another cluster's Secret", func(t *testing.T) {
		rogue := newRogueServer(t)
		t.Cleanup(func() { resetClusterSpecOnFailure(t, host, cluster1, original.Spec) })
		gen := patchClusterSpecAs(t, editor, cluster1, func(s *corev1beta1.FederatedClusterSpec) {
			s.APIEndpoint, s.CABundle = rogue.URL, rogue.CA
			s.SecretRef = &corev1beta1.LocalSecretReference{Name: "fedwarden-" + cluster2 + "-credentials"}
		})
		ready := waitForClusterConditionAt(t, host, rogue, tokens, cluster1, gen, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCredentialsNotBound)
		waitForClusterConditionAt(t, host, rogue, tokens, cluster1, gen, corev1beta1.ClusterConfigMalformed, metav1.ConditionTrue, corev1beta1.ReasonCredentialsNotBound)
		for _, want := range []string{"credentials of cluster " + cluster2 + ", not of " + cluster1, "token is not sent", "fedwarden join " + cluster1} {
			if !strings.Contains(ready.Message, want) {
				t.Errorf("Ready message %q does not say %q", ready.Message, want)
			}
		}
		checkNotBoundEvent(t, host, cluster1)
		restore(t, rogue, cluster1, original.Spec)
	})

	t.Run("own Secret, another endpoint", func(t *testing.T) {
		rogue := newRogueServer(t)
		t.Cleanup(func() { resetClusterSpecOnFailure(t, host, cluster1, original.Spec) })
		gen := patchClusterSpecAs(t, editor, cluster1, func(s *corev1beta1.FederatedClusterSpec) {
			s.APIEndpoint, s.CABundle = rogue.URL, rogue.CA
		})
		ready := waitForClusterConditionAt(t, host, rogue, tokens, cluster1, gen, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCredentialsNotBound)
		for _, want := range []string{"not to spec.apiEndpoint " + rogue.URL, "fedwarden join " + cluster1, corev1beta1.AnnotationCredentialsEndpoint} {
			if !strings.Contains(ready.Message, want) {
				t.Errorf("Ready message %q does not say %q", ready.Message, want)
			}
		}
		restore(t, rogue, cluster1, original.Spec)
	})

	// The other cluster was never disturbed.
	if got, err := clusterCondition(t.Context(), host, cluster2, corev1beta1.ClusterReady); err != nil || got.status != metav1.ConditionTrue {
		t.Errorf("cluster %s: Ready = %+v (%v)", cluster2, got, err)
	}
}

// resetClusterSpecOnFailure sets the spec of FederatedCluster name back to spec when
// the test failed before doing so itself, so that the next test starts from
// a joined cluster.
func resetClusterSpecOnFailure(t *testing.T, host client.Client, name string, spec corev1beta1.FederatedClusterSpec) {
	t.Helper()
	if !t.Failed() {
		return
	}
	fc := &corev1beta1.FederatedCluster{}
	if err := host.Get(context.Background(), types.NamespacedName{Name: name}, fc); err != nil {
		t.Errorf("reading FederatedCluster %s to set it back: %v", name, err)
		return
	}
	before := fc.DeepCopy()
	fc.Spec = spec
	if err := host.Patch(context.Background(), fc, client.MergeFrom(before)); err != nil {
		t.Errorf("setting FederatedCluster %s back: %v", name, err)
	}
}

// checkNotBoundEvent waits for the Warning Event that says why the token
// of cluster name is not sent.
func checkNotBoundEvent(t *testing.T, host client.Client, name string) {
	t.Helper()
	poll.Eventually(t, loadSlack, fmt.Sprintf("a Warning Event %s on %s", corev1beta1.ReasonCredentialsNotBound, name), func(ctx context.Context) (bool, string) {
		events := &corev1.EventList{}
		if err := host.List(ctx, events, client.InNamespace(metav1.NamespaceDefault), client.MatchingFieldsSelector{
			Selector: fields.OneTermEqualSelector("involvedObject.name", name),
		}); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == corev1beta1.ReasonCredentialsNotBound && strings.Contains(e.Message, "fedwarden join") {
				return true, ""
			}
			seen = append(seen, e.Type+" "+e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
}
