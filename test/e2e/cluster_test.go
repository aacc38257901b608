package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/poll"
)

// conditionState is a condition as a user reads it in kubectl.
type conditionState struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// clusterCondition returns condition typ of FederatedCluster name.
func clusterCondition(ctx context.Context, c client.Client, name, typ string) (conditionState, error) {
	fc := &corev1beta1.FederatedCluster{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, fc); err != nil {
		return conditionState{}, err
	}
	cond := meta.FindStatusCondition(fc.Status.Conditions, typ)
	if cond == nil {
		return conditionState{status: "absent"}, nil
	}
	return conditionState{status: cond.Status, reason: cond.Reason, message: cond.Message}, nil
}

// waitForCondition waits until FederatedCluster name has condition typ with
// status and reason, and returns it.
func waitForCondition(t *testing.T, c client.Client, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) conditionState {
	t.Helper()
	var got conditionState
	poll.Eventually(t, timeout, fmt.Sprintf("%s: %s=%s (%s)", name, typ, status, reason), func(ctx context.Context) (bool, string) {
		var err error
		got, err = clusterCondition(ctx, c, name, typ)
		if err != nil {
			return false, err.Error()
		}
		return got.status == status && got.reason == reason, fmt.Sprintf("%+v", got)
	})
	return got
}

// memberToken returns the working token join stored for the shared test
// bed's first member.
func memberToken(t *testing.T, c client.Client) string {
	t.Helper()
	joinedMembers(t)
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: fedNamespace, Name: "fedwarden-" + fed.Members[0].Name + "-credentials"}
	if err := c.Get(t.Context(), key, secret); err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	return string(secret.Data[corev1beta1.SecretTokenKey])
}

// serviceAccountToken returns a working token of member m, minted
// (TokenRequest) for a ServiceAccount name made in its default namespace:
// it has the rights of any authenticated user, which a probe needs.
func serviceAccountToken(t *testing.T, m *localfed.Cluster, name string) string {
	t.Helper()
	kube, err := m.Client()
	if err != nil {
		t.Fatal(err)
	}
	accounts := kube.CoreV1().ServiceAccounts(metav1.NamespaceDefault)
	if _, err := accounts.Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ServiceAccount %s in %s: %v", name, m.Name, err)
	}
	lifetime := int64(time.Hour / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &lifetime}}
	tr, err := accounts.CreateToken(t.Context(), name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a token of ServiceAccount %s in %s: %v", name, m.Name, err)
	}
	return tr.Status.Token
}

// createCluster creates a FederatedCluster and, when data is not nil, the
// Secret it names; both are deleted when the test ends.
func createCluster(t *testing.T, c client.Client, name, endpoint string, ca []byte, data map[string][]byte) {
	t.Helper()
	secretName := name + "-credentials"
	if data != nil {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: secretName,
			Annotations: registration.CredentialsBinding(name, endpoint, ca)}, Data: data}
		if err := c.Create(t.Context(), secret); err != nil {
			t.Fatalf("creating Secret %s: %v", secretName, err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), secret) })
	}
	fc := &corev1beta1.FederatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1beta1.FederatedClusterSpec{
			APIEndpoint: endpoint, CABundle: ca,
			SecretRef: &corev1beta1.LocalSecretReference{Name: secretName},
		},
	}
	if err := c.Create(t.Context(), fc); err != nil {
		t.Fatalf("creating FederatedCluster %s: %v", name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), fc) })
}

// Each bad setting gets the right condition and reason, and a message that
// says what to fix; the good clusters stay Ready.
func TestBadClusterSettings(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	token := memberToken(t, host)
	m := fed.Members[0]
	closedPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	withToken := map[string][]byte{corev1beta1.SecretTokenKey: []byte(token)}
	tests := []struct {
		name       string
		endpoint   string
		ca         []byte
		data       map[string][]byte
		ready      string // reason of Ready=False
		offline    metav1.ConditionStatus
		malformed  metav1.ConditionStatus
		inMessage  string
		afterProbe bool // the reason needs probes, up to the failure threshold
	}{
		{name: "bad-unreachable", endpoint: fmt.Sprintf("https://127.0.0.1:%d", closedPort), ca: m.CAData, data: withToken,
			ready: corev1beta1.ReasonClusterUnreachable, offline: "True", malformed: "False", inMessage: "connection refused", afterProbe: true},
		{name: "bad-ca", endpoint: m.Endpoint, ca: fed.Host.CAData, data: withToken,
			ready: corev1beta1.ReasonCertificateUntrusted, offline: "False", malformed: "False", inMessage: "spec.caBundle", afterProbe: true},
		{name: "bad-token", endpoint: m.Endpoint, ca: m.CAData, data: map[string][]byte{corev1beta1.SecretTokenKey: []byte("not-a-valid-token")},
			ready: corev1beta1.ReasonCredentialsRejected, offline: "False", malformed: "False", inMessage: "401", afterProbe: true},
		{name: "bad-no-secret", endpoint: m.Endpoint, ca: m.CAData,
			ready: corev1beta1.ReasonSecretNotFound, offline: "Unknown", malformed: "True", inMessage: "does not exist"},
		{name: "bad-no-token-key", endpoint: m.Endpoint, ca: m.CAData, data: map[string][]byte{"password": []byte(token)},
			ready: corev1beta1.ReasonSecretMalformed, offline: "Unknown", malformed: "True", inMessage: `no "token" key`},
		{name: "bad-ca-not-pem", endpoint: m.Endpoint, ca: []byte("this is not a certificate"), data: withToken,
			ready: corev1beta1.ReasonCABundleMalformed, offline: "Unknown", malformed: "True", inMessage: "no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			createCluster(t, host, tt.name, tt.endpoint, tt.ca, tt.data)
			// A new cluster takes its first probe's verdict at once.
			within := cm.probes.probesWithin(1)
			if tt.afterProbe {
				within = cm.probes.failedWithin()
			}
			ready := waitForCondition(t, host, tt.name, corev1beta1.ClusterReady, metav1.ConditionFalse, tt.ready, within)
			if !strings.Contains(ready.message, tt.inMessage) {
				t.Errorf("Ready message %q does not say %q", ready.message, tt.inMessage)
			}
			if strings.Contains(ready.message, token[len(token)-16:]) {
				t.Errorf("Ready message shows the token")
			}
			for typ, want := range map[string]metav1.ConditionStatus{corev1beta1.ClusterOffline: tt.offline, corev1beta1.ClusterConfigMalformed: tt.malformed} {
				got, err := clusterCondition(t.Context(), host, tt.name, typ)
				if err != nil || got.status != want {
					t.Errorf("%s = %+v (%v), want %s", typ, got, err, want)
				}
			}
			if v, ok := cm.metric(t, fmt.Sprintf("fedwarden_cluster_ready{cluster=%q}", tt.name)); !ok || v != 0 {
				t.Errorf("fedwarden_cluster_ready{cluster=%q} = %v (exported: %v), want 0", tt.name, v, ok)
			}
		})
	}
	// The good clusters are checked once the parallel cases above have
	// run, their bad clusters probed beside them.
	t.Cleanup(func() {
		for _, mem := range fed.Members {
			if got, err := clusterCondition(context.Background(), host, mem.Name, corev1beta1.ClusterReady); err != nil || got.status != metav1.ConditionTrue {
				t.Errorf("good cluster %s: Ready = %+v (%v)", mem.Name, got, err)
			}
		}
	})
}

// A Secret created after the FederatedCluster that needed it makes the
// cluster Ready: the controller watches the credential Secrets.
func TestMissingSecretThenCreated(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	const name = "late-secret"
	m := ownMember(t, name)
	token := serviceAccountToken(t, m, name)
	createCluster(t, host, name, m.Endpoint, m.CAData, nil)
	waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonSecretNotFound, cm.probes.probesWithin(1))
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: name + "-credentials",
			Annotations: registration.CredentialsBinding(name, m.Endpoint, m.CAData)},
		Data: map[string][]byte{corev1beta1.SecretTokenKey: []byte(token)},
	}
	if err := host.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Delete(context.Background(), secret) })
	waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, cm.probes.probesWithin(1))
}

// Deleting the member's token Secret revokes the token; the cluster reports
// CredentialsRejected.
func TestRevokedToken(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	const name = "revoked"
	m := joinOwnMember(t, name)
	member := newClient(t, m.Config)
	tokenSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fedNamespace, Name: "fedwarden-" + name + "-token"}}
	if err := member.Delete(t.Context(), tokenSecret); err != nil {
		t.Fatalf("revoking the token: %v", err)
	}
	host := hostClient(t)
	got := waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCredentialsRejected, cm.probes.failedWithin())
	if !strings.Contains(got.message, "fedwarden join") {
		t.Errorf("message %q does not say how to fix it", got.message)
	}
	// The Events are recorded a moment after the status is written.
	waitForEvents(t, host, name, corev1.EventTypeNormal, corev1beta1.ReasonClusterReady, 1)
	waitForEvents(t, host, name, corev1.EventTypeWarning, corev1beta1.ReasonCredentialsRejected, 1)
}

// A credentials Secret rotated to a wrong token, its binding annotations
// untouched, still has its token sent to the cluster it is bound to: the
// member rejects it, and within the failure threshold the cluster is
// Ready=False, CredentialsRejected, with a Warning Event; neither shows a
// token. Setting the right token back makes the cluster Ready again, with
// a Normal Event.
func TestRotatedToWrongToken(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	const name = "wrong-token"
	joinOwnMember(t, name)
	host := hostClient(t)
	fc := &corev1beta1.FederatedCluster{}
	if err := host.Get(t.Context(), types.NamespacedName{Name: name}, fc); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: fedNamespace, Name: fc.Spec.SecretRef.Name}
	secret := &corev1.Secret{}
	if err := host.Get(t.Context(), key, secret); err != nil {
		t.Fatal(err)
	}
	right := string(secret.Data[corev1beta1.SecretTokenKey])
	wrong := forgedToken(t, right)
	// join returned once the cluster was Ready; its Event counts first.
	readyEvents := waitForEvents(t, host, name, corev1.EventTypeNormal, corev1beta1.ReasonClusterReady, 1)

	setToken(t, host, key, wrong)
	ready := waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCredentialsRejected, cm.probes.failedWithin())
	if !strings.Contains(ready.message, "401") || !strings.Contains(ready.message, "fedwarden join") {
		t.Errorf("Ready message %q does not say that the member answered 401 and how to fix it", ready.message)
	}
	checkNoTokenIn(t, "the Ready message", ready.message, right, wrong)
	// The binding still holds: the token was sent, and rejected by the member.
	if got, err := clusterCondition(t.Context(), host, name, corev1beta1.ClusterConfigMalformed); err != nil || got.status != metav1.ConditionFalse {
		t.Errorf("%s = %+v (%v), want False", corev1beta1.ClusterConfigMalformed, got, err)
	}
	waitForEvents(t, host, name, corev1.EventTypeWarning, corev1beta1.ReasonCredentialsRejected, 1)

	setToken(t, host, key, right)
	waitForCondition(t, host, name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, cm.probes.probesWithin(1))
	waitForEvents(t, host, name, corev1.EventTypeNormal, corev1beta1.ReasonClusterReady, readyEvents+1)
	for _, e := range clusterEvents(t, host, name) {
		checkNoTokenIn(t, fmt.Sprintf("the %s Event %s", e.Type, e.Reason), e.Message, right, wrong)
	}
}

// setToken sets the token of the credentials Secret key. Only the token
// changes: the annotations that bind the Secret to its cluster stay.
func setToken(t *testing.T, c client.Client, key types.NamespacedName, token string) {
	t.Helper()
	secret := &corev1.Secret{}
	if err := c.Get(t.Context(), key, secret); err != nil {
		t.Fatalf("reading Secret %s: %v", key, err)
	}
	before := secret.DeepCopy()
	secret.Data[corev1beta1.SecretTokenKey] = []byte(token)
	if err := c.Patch(t.Context(), secret, client.MergeFrom(before)); err != nil {
		t.Fatalf("setting the token of Secret %s: %v", key, err)
	}
	if !maps.Equal(secret.Annotations, before.Annotations) {
		t.Fatalf("setting the token of Secret %s changed its annotations: %v, then %v", key, before.Annotations, secret.Annotations)
	}
}

// forgedToken returns a token with the header and claims of the JWT token
// but a signature of random bytes: well-formed, and wrong.
func forgedToken(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token is not a JWT: %d parts", len(parts))
	}
	signature := make([]byte, base64.RawURLEncoding.DecodedLen(len(parts[2])))
	if _, err := rand.Read(signature); err != nil {
		t.Fatal(err)
	}
	return parts[0] + "." + parts[1] + "." + base64.RawURLEncoding.EncodeToString(signature)
}

// checkNoTokenIn fails if text, found in where, shows any part of a token.
func checkNoTokenIn(t *testing.T, where, text string, tokens ...string) {
	t.Helper()
	for i, token := range tokens {
		for _, part := range append(strings.Split(token, "."), token) {
			if len(part) >= 16 && strings.Contains(text, part) {
				t.Errorf("%s shows token %d of %d", where, i+1, len(tokens))
				break
			}
		}
	}
}

// clusterEvents returns the Events about FederatedCluster name.
func clusterEvents(t *testing.T, c client.Client, name string) []corev1.Event {
	t.Helper()
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(metav1.NamespaceDefault), client.MatchingFieldsSelector{
		Selector: fields.OneTermEqualSelector("involvedObject.name", name),
	}); err != nil {
		t.Fatalf("listing the Events of %s: %v", name, err)
	}
	return events.Items
}

// waitForEvents waits until Events of type typ and reason about
// FederatedCluster name were recorded at least n times (an Event that
// recurs is counted in its series), and returns how many times.
func waitForEvents(t *testing.T, c client.Client, name, typ, reason string, n int) int {
	t.Helper()
	var count int
	poll.Eventually(t, loadSlack, fmt.Sprintf("%d %s Events %s of %s", n, typ, reason, name), func(context.Context) (bool, string) {
		count = 0
		for _, e := range clusterEvents(t, c, name) {
			if e.Type == typ && e.Reason == reason {
				count += max(1, int(e.Count), seriesCount(e.Series))
			}
		}
		return count >= n, fmt.Sprint(count)
	})
	return count
}

func seriesCount(s *corev1.EventSeries) int {
	if s == nil {
		return 0
	}
	return int(s.Count)
}

func TestNonHTTPSEndpointIsRejected(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	fc := &corev1beta1.FederatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "plain-http"},
		Spec: corev1beta1.FederatedClusterSpec{
			APIEndpoint: strings.Replace(fed.Members[0].Endpoint, "https", "http", 1),
			SecretRef:   &corev1beta1.LocalSecretReference{Name: "x"},
		},
	}
	err := host.Create(t.Context(), fc)
	if err == nil || !strings.Contains(err.Error(), "https://") {
		t.Errorf("creating a FederatedCluster with an http endpoint: err = %v, want a rejection naming https", err)
	}
}

// steadyWindow is how long TestSteadyStateWritesNothing watches.
const steadyWindow = 60 * time.Second

// A steady federation writes nothing: 60 s of probing the joined members
// leaves their FederatedClusters untouched.
func TestSteadyStateWritesNothing(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	joinedMembers(t)
	host := hostClient(t)
	for _, m := range fed.Members {
		waitForCondition(t, host, m.Name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, cm.probes.probesWithin(1))
	}
	wc, err := client.NewWithWatch(fed.Host.Config, client.Options{Scheme: host.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	var list corev1beta1.FederatedClusterList
	if err := host.List(t.Context(), &list); err != nil {
		t.Fatal(err)
	}
	w, err := wc.Watch(t.Context(), &corev1beta1.FederatedClusterList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	probesBefore := probeCount(t, fed.Members[0].Name)
	writes := map[string]int{}
	timeout := time.After(steadyWindow)
	for done := false; !done; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended early")
			}
			if fc, isFC := ev.Object.(*corev1beta1.FederatedCluster); isFC && ev.Type == watch.Modified && isMember(fc.Name) {
				writes[fc.Name]++
			}
		case <-timeout:
			done = true
		}
	}
	if len(writes) > 0 {
		t.Errorf("in %s of steady state the members' FederatedClusters were written: %v", steadyWindow, writes)
	}
	// The controller was busy probing all along: a probe starts a period
	// after the last one ended and takes at most the timeout (on an idle
	// machine, about one probe per period).
	least := float64(steadyWindow / (cm.probes.period + cm.probes.timeout))
	if probes := probeCount(t, fed.Members[0].Name) - probesBefore; probes < least {
		t.Errorf("only %v probes of %s in %s, want at least %v: the steady state was not exercised", probes, fed.Members[0].Name, steadyWindow, least)
	}
}

func isMember(name string) bool {
	for _, m := range fed.Members {
		if m.Name == name {
			return true
		}
	}
	return false
}

func probeCount(t *testing.T, cluster string) float64 {
	t.Helper()
	v, ok := cm.metric(t, fmt.Sprintf("fedwarden_cluster_probe_duration_seconds_count{cluster=%q,outcome=\"ready\"}", cluster))
	if !ok {
		t.Fatalf("the controller-manager exports no probe count for %s", cluster)
	}
	return v
}

func TestReadyMetric(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	joinedMembers(t)
	for _, m := range fed.Members {
		if v, ok := cm.metric(t, fmt.Sprintf("fedwarden_cluster_ready{cluster=%q}", m.Name)); !ok || v != 1 {
			t.Errorf("fedwarden_cluster_ready{cluster=%q} = %v (exported: %v), want 1", m.Name, v, ok)
		}
	}
}
