package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"

	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/leakscan"
	"github.com/fedwarden/fedwarden/test/poll"
)

// noSecretLeaves names the check that runs after every test of the
// package (TestMain): it is not a test function, as it must see what every
// test, parallel ones included, created and logged.
const noSecretLeaves = "TestNoSecretLeaves"

// leaks collects, for the whole run, the secret values the tests create and
// the places where none may appear (package leakscan): fedtest tells it of
// every controller-manager's and agent's log, of the tokens it mints, and
// watches the clusters of every test bed a controller-manager works on.
var leaks *leakscan.Scanner

// startLeakScan starts collecting, before the shared test bed starts, so
// that its clusters are watched from the first object on; the kept logs go
// under dir.
func startLeakScan(dir string) {
	leaks = leakscan.New(filepath.Join(dir, "leakscan"))
	fedtest.ScanForLeaks(leaks)
}

// checkNoSecretLeaves proves the safety contract's invariant "no secret
// leaves" over the whole run: no value of any Secret of any test bed, no
// token a test minted, and no admin key appears in a log of a
// controller-manager or an agent, in an Event of any namespace, or in the
// status of a FederatedCluster, FederatedTypeConfig, ClusterPropagatedVersion
// or federated resource. Values shorter than leakscan.MinLength bytes are
// left out, as they would match by chance; the report says how many. It
// runs once every test has ended and every controller-manager of the run
// has stopped (their logs are whole), before the shared test bed stops. It
// prints what it found as a failed test would, naming each place and whose
// value it holds, never the value, and returns 1 when it found any.
func checkNoSecretLeaves() int {
	if leaks == nil {
		return 0
	}
	start := time.Now()
	fedtest.StopWatching()
	found, summary, err := leaks.Scan()
	var real []leakscan.Leak
	canaries := map[string]bool{}
	for _, l := range found {
		if l.Canary {
			canaries[l.Origin] = true
		} else {
			real = append(real, l)
		}
	}
	blind := len(canaries) < summary.Canaries
	took := time.Since(start).Seconds()
	if len(real) == 0 && err == nil && !blind {
		if testing.Verbose() {
			fmt.Printf("--- PASS: %s (%.2fs)\n    %s; %d canaries planted, all found\n", noSecretLeaves, took, summary, summary.Canaries)
			for _, origin := range summary.Origins {
				fmt.Printf("    looked for %s\n", origin)
			}
		}
		return 0
	}
	fmt.Printf("--- FAIL: %s (%.2fs)\n    %s\n", noSecretLeaves, took, summary)
	for _, l := range real {
		fmt.Printf("    a secret left: %s\n", l)
	}
	if blind {
		fmt.Printf("    the scan is blind: it found %d of the %d canaries TestNoSecretLeavesScanSeesAPlantedSecret planted, so it would miss a leak too\n",
			len(canaries), summary.Canaries)
	}
	if err != nil {
		fmt.Printf("    the scan is incomplete: %v\n", err)
	}
	fmt.Fprintf(os.Stderr, "FAIL: %s: invariant 7 of the safety contract (docs/safety.md), no secret leaves, is not shown: %d places hold secret values\n", noSecretLeaves, len(real))
	return 1
}

// The leak scan sees what it must: a Secret value planted in the message of
// an Event, both in a test namespace that is deleted when the test ends,
// is found by the scan at the end of the run, which fails if it is not
// (checkNoSecretLeaves). Other tests prove nothing leaks; this one proves
// that their proof can fail.
func TestNoSecretLeavesScanSeesAPlantedSecret(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	host := hostClient(t)
	ns := testNamespace(t, host)
	canary := "canary-" + randomValue(t)
	leaks.Canary([]byte(canary))
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "canary"}, Data: map[string][]byte{"value": []byte(canary)}}
	createObject(t, host, secret)
	createObject(t, host, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "canary"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: "canary"},
		Reason:         "Planted", Type: corev1.EventTypeNormal,
		Message: "a secret value planted for the leak scan to find: " + canary,
	})
	poll.Eventually(t, time.Minute, "the leak scan to see the Secret and the Event", func(context.Context) (bool, string) {
		return leaks.Sees(canary), "not seen"
	})
}

// Case 2 of issue 28, no secret leaves through a member's refusal: the
// second member runs a password-strength ValidatingAdmissionPolicy whose
// messageExpression quotes the Secret's value as the policy sees it
// (base64), whole and its first 12 characters (as Kyverno's and
// Gatekeeper's messages often do). A FederatedSecret
// placed on both members is written to the first and refused by the
// second. The CPV's entry of the second, the FederatedSecret's
// status.clusters message and Propagated condition, and the Warning Event
// say that the member refused it, by the policy's name, reason and code,
// and hold no part of the value. The first member runs the same policy
// bound with action Warn: the controller-manager logs that warning
// withheld. The whole-run scan (checkNoSecretLeaves) looks for the value
// in every log, Event and status too. TestPullMode checks the same with a
// Pull cluster refusing, whose agent syncs it.
func TestAMembersRefusalQuotingASecretLeavesNoValue(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableSecrets(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	checkRefusalQuotingASecret(t, host, fed.Members[0].Config, memberClient(t, 1), ns, fed.Members[0].Name, fed.Members[1].Name, fed.Host.Kubeconfig)
	// The first member's warning reached the controller-manager's log,
	// withheld (it quotes a part of the value), where checkNoSecretLeaves
	// looks for the value too.
	poll.Eventually(t, 30*time.Second, "the controller-manager to log the member's warning", func(context.Context) (bool, string) {
		data, err := os.ReadFile(cm.logPath)
		return err == nil && slices.ContainsFunc(strings.Split(string(data), "\n"), func(line string) bool {
			return strings.Contains(line, `"namespace":"`+ns+`"`) && strings.Contains(line, "Warning: a warning of the member's admission, withheld")
		}), fmt.Sprint(err)
	})
}

// checkRefusalQuotingASecret is TestAMembersRefusalQuotingASecretLeavesNoValue
// in namespace ns of a test bed whose host is host: cluster ok (okConfig,
// as its admin) takes the Secret with a warning of its admission that
// quotes the value, cluster refuser (refuserClient) refuses it. With
// hostKubeconfig, refuser is a Push cluster: the refusal is to be seen in
// an Event of the host, and in `fedwarden plan`'s dry run.
func checkRefusalQuotingASecret(t *testing.T, host client.Client, okConfig *rest.Config, refuserClient client.Client, ns, ok, refuser, hostKubeconfig string) {
	t.Helper()
	okClient := newClient(t, okConfig)
	password := randomValue(t)
	leaks.AddSecret(fmt.Sprintf("FederatedSecret %s/db key password", ns), []byte(password))
	b64 := base64.StdEncoding.EncodeToString([]byte(password))

	name := "e2e-password-strength-" + ns
	policy, binding := fedtest.RefusingPolicy(name, ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}},
	}, "!has(object.data) || !('password' in object.data)", "the password is too weak")
	policy.Spec.Validations[0].MessageExpression = "'the password ' + string(object.data.password) + ' (starting ' + " +
		"string(object.data.password).substring(0, 12) + ') is too weak'"
	// The same policy, bound with action Warn in the other member: the
	// copy is written, and the answer warns with the value.
	warnPolicy, warnBinding := fedtest.RefusingPolicy("e2e-password-warn-"+ns, ns, policy.Spec.MatchConstraints.ResourceRules[0].RuleWithOperations,
		policy.Spec.Validations[0].Expression, policy.Spec.Validations[0].Message)
	warnPolicy.Spec.Validations[0].MessageExpression = policy.Spec.Validations[0].MessageExpression
	warnBinding.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	for _, o := range []struct {
		c       client.Client
		objects []client.Object
	}{{refuserClient, []client.Object{policy, binding}}, {okClient, []client.Object{warnPolicy, warnBinding}}} {
		// The probe below needs the namespace in the member; Fedwarden
		// writes the copy into it as it finds it.
		if err := o.c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		for _, obj := range o.objects {
			createObject(t, o.c, obj)
		}
		t.Cleanup(func() {
			for _, obj := range slices.Backward(o.objects) {
				_ = o.c.Delete(context.Background(), obj)
			}
		})
	}
	// The member enforces a policy a moment after it is stored; a dry run
	// shows it quotes the value (as the policy sees it: decoded, or base64
	// if CEL sees the bytes as a string), which Fedwarden must not record.
	poll.Eventually(t, 30*time.Second, "the member's policy to refuse a Secret quoting its value", func(ctx context.Context) (bool, string) {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Data: map[string][]byte{"password": []byte(password)}}
		err := refuserClient.Create(ctx, probe, client.DryRunAll)
		return err != nil && (strings.Contains(err.Error(), password) || strings.Contains(err.Error(), b64)), fmt.Sprint(err)
	})
	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(okConfig)
	cfg.WarningHandlerWithContext = warnings
	warned, err := buildClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the other member's policy to warn", func(ctx context.Context) (bool, string) {
		probe := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"}, Data: map[string][]byte{"password": []byte(password)}}
		err := warned.Create(ctx, probe, client.DryRunAll)
		return err == nil && warnings.seen("e2e-password-warn-"+ns), fmt.Sprint(err)
	})

	createObject(t, host, decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: db, namespace: %s}
spec:
  template:
    type: Opaque
    data: {password: %s}
  placement: {clusters: [{name: %s}, {name: %s}]}
`, ns, b64, ok, refuser)))
	refusal := "ValidatingAdmissionPolicy '" + name + "'"
	const why = "reason Invalid, code 422"
	waitForOutcome(t, host, "FederatedSecret", ns, "db", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		ok:      {reason: typesv1beta1.ClusterPropagated},
		refuser: {reason: typesv1beta1.ClusterApplyFailed, message: refusal},
	})
	if hostKubeconfig != "" {
		waitForEvent(t, host, ns, "db", typesv1beta1.ClusterApplyFailed, "cluster "+refuser, refusal, why)
	}
	entry := waitForEntry(t, host, ns, "secret-db", refuser, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.ApplyFailed })

	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedSecret")
	if err := host.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "db"}, obj); err != nil {
		t.Fatal(err)
	}
	var st typesv1beta1.FederatedStatus
	raw, _, _ := unstructured.NestedMap(obj.Object, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{"the CPV's entry of " + refuser: entry.Message}
	for _, cl := range st.Clusters {
		texts["the FederatedSecret's status.clusters["+string(cl.Name)+"]"] = cl.Message
	}
	if c := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated); c != nil {
		texts["the FederatedSecret's Propagated condition"] = c.Message
	}
	// A Pull cluster's agent records its Events in the control-plane
	// namespace.
	for _, where := range []string{ns, corev1beta1.DefaultFederationNamespace} {
		for i, e := range eventsOf(t, host, where, "db") {
			texts[fmt.Sprintf("Event %d of the FederatedSecret in %s", i, where)] = e
		}
	}
	// The forms of the value looked for, longest first; a failure prints
	// the text with each replaced by its name, never the value.
	forms := [][2]string{{"its base64", b64}, {"the value", password}, {"the first 12 bytes of its base64", b64[:12]}, {"its first 12 bytes", password[:12]}}
	hide := func(text string) string {
		for _, f := range forms {
			text = strings.ReplaceAll(text, f[1], "<"+f[0]+">")
		}
		return text
	}
	if hostKubeconfig != "" {
		r := runFedwarden(t, "plan", "federatedsecret/db", "-n", ns, "--host-kubeconfig", hostKubeconfig)
		texts["fedwarden plan's output"] = r.stdout + r.stderr
		if !strings.Contains(r.stdout+r.stderr, refusal) {
			t.Errorf("fedwarden plan does not show %s's refusal (%s):\n%s", refuser, refusal, hide(r.stdout+r.stderr))
		}
	}
	for where, text := range texts {
		for _, f := range forms {
			if strings.Contains(text, f[1]) {
				t.Errorf("%s holds %s of the Secret: %q", where, f[0], hide(text))
			}
		}
	}
	for where, text := range map[string]string{"the CPV's entry": entry.Message, "the Propagated condition": texts["the FederatedSecret's Propagated condition"]} {
		if !strings.Contains(text, refusal) || !strings.Contains(text, why) {
			t.Errorf("%s does not say who refused the Secret and why (%s; %s): %q", where, refusal, why, hide(text))
		}
	}
}

// checkPullRefusalQuotingASecret is checkRefusalQuotingASecret with the
// Pull cluster of b refusing: its agent syncs the Secret and writes the
// CPV entry. The FederatedSecret is deleted after, so that the later
// subtests of TestPullMode see no Secret's writes.
func checkPullRefusalQuotingASecret(t *testing.T, b *pullBed, ns string) {
	t.Helper()
	if r := runFedwarden(t, "enable", "secrets", "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("fedwarden enable secrets:\n%s", r)
	}
	checkRefusalQuotingASecret(t, b.host, b.push.Config, newClient(t, b.pull.Config), ns, b.push.Name, b.pull.Name, "")
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedSecret")
	obj.SetNamespace(ns)
	obj.SetName("db")
	if err := b.host.Delete(t.Context(), obj); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, settleWithin, "the FederatedSecret to be deleted", func(ctx context.Context) (bool, string) {
		err := b.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "db"}, obj)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// warningRecorder keeps the warnings a client's requests are answered
// with.
type warningRecorder struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

// seen tells whether a warning holds part.
func (w *warningRecorder) seen(part string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.ContainsFunc(w.texts, func(text string) bool { return strings.Contains(text, part) })
}
