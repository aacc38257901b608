package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// A copy's health follows its status, as the member's own Deployment
// controller writes it: a Deployment of no replica is Healthy at once; one
// whose Pods never become ready (the test bed's members have no node) is
// Progressing, then Degraded when its progress deadline passes. The CPV
// entries, the CPV's count, the federated resource's per-cluster health and
// its HEALTHY column say so; health is not drift.
func TestHealthOfCopies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	idle := newFederatedDeployment(t, ns, "idle", 0, placedOn(m1, m2))
	stuck := newFederatedDeployment(t, ns, "stuck", 1, placedOn(m1, m2))
	if err := unstructured.SetNestedField(stuck.Object, int64(2), "spec", "template", "spec", "progressDeadlineSeconds"); err != nil {
		t.Fatal(err)
	}
	createObject(t, host, idle)
	createObject(t, host, stuck)
	for _, m := range []string{m1, m2} {
		healthy := waitForEntry(t, host, ns, "deployment-idle", m, func(cv typesv1beta1.ClusterVersion) bool { return cv.Health == corev1beta1.HealthHealthy })
		if healthy.HealthReason != "ReplicasAvailable" {
			t.Errorf("%s's entry of idle = %+v; want Healthy, ReplicasAvailable", m, healthy)
		}
		degraded := waitForEntry(t, host, ns, "deployment-stuck", m, func(cv typesv1beta1.ClusterVersion) bool { return cv.Health == corev1beta1.HealthDegraded })
		if degraded.HealthReason != "ProgressDeadlineExceeded" || !strings.Contains(degraded.HealthMessage, "progress deadline exceeded") || degraded.State != typesv1beta1.InSync {
			t.Errorf("%s's entry of stuck = %+v; want Degraded, ProgressDeadlineExceeded with the controller's message, and InSync (health is not drift)", m, degraded)
		}
	}
	for name, w := range map[string]struct {
		health  corev1beta1.HealthState
		healthy int32
		column  string
	}{"idle": {corev1beta1.HealthHealthy, 2, "2/2"}, "stuck": {corev1beta1.HealthDegraded, 0, "0/2"}} {
		poll.Eventually(t, 30*time.Second, "the health of "+name+" in its status and its CPV's", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, host, ns, "deployment-"+name)
			_, st, ferr := federatedStatus(ctx, host, ns, name)
			if err != nil || ferr != nil {
				return false, fmt.Sprint(err, ferr)
			}
			health := map[string]corev1beta1.HealthState{}
			for _, c := range st.Clusters {
				health[string(c.Name)] = c.Health
			}
			ok := ptr.Deref(cpv.Status.HealthyClusters, -1) == w.healthy && st.Healthy == w.column && health[m1] == w.health && health[m2] == w.health
			return ok, fmt.Sprintf("CPV healthyClusters %d; federated healthy %q, clusters %v", ptr.Deref(cpv.Status.HealthyClusters, -1), st.Healthy, health)
		})
	}
}

// spec.healthRules judge a kind without built-in rules (Secrets here),
// first rule first; rules that do not compile are reported on the
// FederatedTypeConfig, naming the rule.
func TestHealthRulesOfAKind(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableSecrets(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1 := fed.Members[0].Name
	setRules := func(rules string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"healthRules":%s}}`, rules)
		ftc := &corev1beta1.FederatedTypeConfig{}
		ftc.Name = "secrets"
		if err := host.Patch(t.Context(), ftc, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatalf("setting the healthRules of FederatedTypeConfig secrets: %v", err)
		}
	}
	t.Cleanup(func() {
		ftc := &corev1beta1.FederatedTypeConfig{}
		ftc.Name = "secrets"
		if err := host.Patch(context.Background(), ftc, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"healthRules":null}}`))); err != nil {
			t.Errorf("removing the healthRules of FederatedTypeConfig secrets: %v", err)
		}
	})
	rules, err := json.Marshal([]corev1beta1.HealthRule{
		{Health: corev1beta1.HealthDegraded, When: "object.?metadata.?labels[?'broken'].orValue('') == 'true'", Reason: "BrokenLabel", Message: "'labelled broken by ' + object.metadata.name"},
		{Health: corev1beta1.HealthHealthy, When: "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	setRules(string(rules))
	waitForRulesCondition(t, host, metav1.ConditionTrue, corev1beta1.ReasonHealthRulesCompiled, "2 health rules")

	for name, labels := range map[string]string{"bad": "{broken: 'true'}", "good": "{}"} {
		createObject(t, host, decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: %s, namespace: %s}
spec:
  template:
    metadata: {labels: %s}
    stringData: {k: v}
  placement: {clusters: [{name: %s}]}
`, name, ns, labels, m1)))
	}
	bad := waitForEntry(t, host, ns, "secret-bad", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.Health != "" })
	if bad.Health != corev1beta1.HealthDegraded || bad.HealthReason != "BrokenLabel" || bad.HealthMessage != "labelled broken by bad" {
		t.Errorf("the labelled Secret's entry = %+v; want Degraded, BrokenLabel, labelled broken by bad", bad)
	}
	waitForEntry(t, host, ns, "secret-good", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.Health == corev1beta1.HealthHealthy })

	setRules(`[{"health":"Degraded","when":"object.data.k ==","reason":"Nope"}]`)
	waitForRulesCondition(t, host, metav1.ConditionFalse, corev1beta1.ReasonHealthRulesInvalid, "healthRules[0].when")
}

// waitForRulesCondition waits until the FederatedTypeConfig secrets has its
// HealthRulesValid condition with status, reason and a message holding part.
func waitForRulesCondition(t *testing.T, host client.Client, status metav1.ConditionStatus, reason, part string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "the HealthRulesValid condition", func(ctx context.Context) (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := host.Get(ctx, types.NamespacedName{Name: "secrets"}, ftc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(ftc.Status.Conditions, corev1beta1.TypeConfigHealthRules)
		return c != nil && c.Status == status && c.Reason == reason && strings.Contains(c.Message, part), fmt.Sprintf("%+v", c)
	})
}
