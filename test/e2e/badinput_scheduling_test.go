package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// waitForPreferenceCondition waits until the Scheduled condition of the
// ReplicaSchedulingPreference namespace/name has status and reason, and a
// message containing every one of parts.
func waitForPreferenceCondition(t *testing.T, c client.Client, namespace, name string, status metav1.ConditionStatus, reason string, parts ...string) {
	t.Helper()
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("the RSP %s/%s: Scheduled=%s (%s) saying %q", namespace, name, status, reason, parts), func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("scheduling.kubefed.io/v1alpha1")
		obj.SetKind("ReplicaSchedulingPreference")
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		rsp := &schedulingv1alpha1.ReplicaSchedulingPreference{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, rsp); err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(rsp.Status.Conditions, schedulingv1alpha1.RSPScheduled)
		if cond == nil {
			return false, "no Scheduled condition"
		}
		ok := cond.Status == status && cond.Reason == reason && cond.ObservedGeneration == rsp.Generation
		for _, p := range parts {
			ok = ok && strings.Contains(cond.Message, p)
		}
		return ok, fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
}

// memberReplicas reads the replicas of the Deployment namespace/name in
// each shared member, by member.
func memberReplicas(ctx context.Context, namespace, name string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, m := range fed.Members {
		c, err := buildClient(m.Config)
		if err != nil {
			return nil, err
		}
		d := &unstructured.Unstructured{}
		d.SetAPIVersion("apps/v1")
		d.SetKind("Deployment")
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return nil, fmt.Errorf("%s: %w", m.Name, err)
		}
		n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas")
		out[m.Name] = int32(n)
	}
	return out, nil
}

// waitForMemberReplicasOf waits until the shared members' Deployments
// namespace/name have the replicas of want, by member.
func waitForMemberReplicasOf(t *testing.T, namespace, name string, want map[string]int32) {
	t.Helper()
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("the Deployments %s/%s to have replicas %v", namespace, name, want), func(ctx context.Context) (bool, string) {
		got, err := memberReplicas(ctx, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		return maps.Equal(got, want), fmt.Sprint(got)
	})
}

// Bad input in a ReplicaSchedulingPreference. A negative minimum or
// weight, a negative total and maxReplicas below minReplicas are refused
// at admission by the CRD. What only the runtime sees: weights that add up
// to 0 leave replicas that no cluster may take. Fedwarden then decides
// nothing: the workload keeps its copies and their replicas (it used to
// scale them to 0 with rebalance, and create new copies with 0 replicas),
// its Scheduled condition is False (Unschedulable) and the RSP's is False
// (NotDivided), both naming the weights, with a Warning Event; another
// workload is untouched, and a weight heals it. A total of 0 is a request,
// not an error: every copy is scaled to 0 and kept.
func TestBadInputInSchedulingPreferences(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name

	negativeMin := preference(t, ns, "web", 4, true, `    "*": {weight: 1, minReplicas: -1}`)
	if err := host.Create(t.Context(), negativeMin, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "greater than or equal to 0") {
		t.Errorf("a negative minReplicas: creating the RSP gives %v, want a refusal", err)
	}

	createObject(t, host, newFederatedDeployment(t, ns, "web", 1, placedOn(m1, m2)))
	createObject(t, host, newFederatedDeployment(t, ns, "other", 1, placedOn(m1, m2)))
	createObject(t, host, preference(t, ns, "web", 6, true, fmt.Sprintf("    %s: {weight: 1}\n    %s: {weight: 1}", m1, m2)))
	divided := map[string]int32{m1: 3, m2: 3}
	waitForDecision(t, host, ns, "web", divided)
	waitForMemberReplicasOf(t, ns, "web", divided)
	waitForCPV(t, host, ns, "deployment-other", "1", "1", m1, m2)
	before := copiesOf(t, ns, "web", "other")

	t.Run("weights that add up to 0", func(t *testing.T) {
		patchPreference(t, host, ns, "web", fmt.Sprintf(`{"spec":{"clusters":{%q:{"weight":0},%q:{"weight":0}}}}`, m1, m2))
		const cause = "6 of 6 replicas cannot be divided: the weights of the selected clusters add up to 0"
		waitForScheduled(t, host, ns, "web", metav1.ConditionFalse, cause, "stays on "+m1+", "+m2)
		waitForPreferenceCondition(t, host, ns, "web", metav1.ConditionFalse, schedulingv1alpha1.ReasonNotDivided, cause)
		waitForEvent(t, host, ns, "web", typesv1beta1.ReasonUnschedulable, cause)
		if typ := eventTypeOf(t, host, ns, "web", typesv1beta1.ReasonUnschedulable); typ != corev1.EventTypeWarning {
			t.Errorf("the Unschedulable Event is of type %q, want Warning", typ)
		}
		waitForResyncs(t)
		if got := decision(waitForDecision(t, host, ns, "web", divided)); !maps.Equal(got, divided) {
			t.Errorf("the decision changed: %v", got)
		}
		if after := copiesOf(t, ns, "web", "other"); !maps.Equal(before, after) {
			t.Errorf("member copies were touched:\nbefore %v\nafter  %v", before, after)
		}
		waitForMemberReplicasOf(t, ns, "web", divided)
		checkNoEventStorm(t, host, ns, "web")
	})

	t.Run("fixed", func(t *testing.T) {
		patchPreference(t, host, ns, "web", fmt.Sprintf(`{"spec":{"totalReplicas":8,"clusters":{%q:{"weight":1},%q:{"weight":1}}}}`, m1, m2))
		waitForScheduled(t, host, ns, "web", metav1.ConditionTrue)
		waitForPreferenceCondition(t, host, ns, "web", metav1.ConditionTrue, schedulingv1alpha1.ReasonDivided, "divided 8 replicas")
		waitForMemberReplicasOf(t, ns, "web", map[string]int32{m1: 4, m2: 4})
	})

	t.Run("a total of 0", func(t *testing.T) {
		patchPreference(t, host, ns, "web", `{"spec":{"totalReplicas":0}}`)
		waitForPreferenceCondition(t, host, ns, "web", metav1.ConditionTrue, schedulingv1alpha1.ReasonDivided, "divided 0 replicas")
		waitForMemberReplicasOf(t, ns, "web", map[string]int32{m1: 0, m2: 0})
		waitForEvent(t, host, ns, "web", typesv1beta1.ReasonScheduled, m1+" (0 replicas)")
		after := copiesOf(t, ns, "web", "other")
		for k, was := range before {
			if now := after[k]; now.uid != was.uid || strings.HasSuffix(k, "/other") && now != was {
				t.Errorf("%s: %v, was %v", k, now, was)
			}
		}
	})
}

// eventTypeOf returns the type of the newest Event of name with reason.
func eventTypeOf(t *testing.T, c client.Client, namespace, name, reason string) string {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	typ := ""
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			typ = e.Type
		}
	}
	return typ
}
