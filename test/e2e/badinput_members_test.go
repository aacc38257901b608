package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// setAnnotation sets (or, when value is nil, removes) one annotation of
// the FederatedDeployment namespace/name.
func setAnnotation(t *testing.T, namespace, name, key string, value *string) {
	t.Helper()
	patchFederated(t, hostClient(t), namespace, name, func(obj *unstructured.Unstructured) {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		if value == nil {
			delete(annotations, key)
		} else {
			annotations[key] = *value
		}
		obj.SetAnnotations(annotations)
	})
}

// The kubefed.io/resync annotation is opaque: `fedwarden resync` writes a
// timestamp, but any other non-empty string works the same way. A value
// the ClusterPropagatedVersion has not recorded re-applies the resource
// once to every placed cluster (here: a hand edit kept under remediation
// Alert is written back) and is recorded in the CPV's status.resync; the
// same value again, or an empty one, re-applies nothing (the next hand
// edit stays). Another resource is untouched throughout.
func TestTheResyncAnnotationIsOpaque(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "api", 0, placedOn(m1, m2)+"\n  driftPolicy: {remediation: Alert}"))
	createObject(t, host, newFederatedDeployment(t, ns, "other", 0, placedOn(m1, m2)))
	waitForCPV(t, host, ns, "deployment-api", "1", "1", m1, m2)
	waitForCPV(t, host, ns, "deployment-other", "1", "1", m1, m2)
	member1 := memberClient(t, 0)
	waitForSettled(t, member1, m1, ns, "api")
	other := copiesOf(t, ns, "other")
	api2 := copyStateOf(t, memberClient(t, 1), m2, ns, "api")

	// drift hand-edits m1's copy and waits until it is reported.
	drift := func(t *testing.T, image string) {
		t.Helper()
		editImage(t, member1, ns, "api", image)
		waitForEntry(t, host, ns, "deployment-api", m1, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.ModifiedOutOfBand
		})
	}
	recorded := ""
	for i, value := range []string{"true", `{"a":1}`, "  ", "42", "not-a-time \u00e9\u00e8"} {
		t.Run(fmt.Sprintf("value %q", value), func(t *testing.T) {
			drift(t, fmt.Sprintf("nginx:hotfix-%d", i))
			setAnnotation(t, ns, "api", typesv1beta1.AnnotationResync, &value)
			poll.Eventually(t, 45*time.Second, "the resync to write the image back and be recorded", func(ctx context.Context) (bool, string) {
				img, err := memberImage(ctx, member1, ns, "api")
				cpv, cerr := cpvOf(ctx, host, ns, "deployment-api")
				if err != nil || cerr != nil {
					return false, fmt.Sprint(err, cerr)
				}
				return img == "nginx:1.27" && cpv.Status.Resync == value, fmt.Sprintf("image %s, CPV status.resync %q", img, cpv.Status.Resync)
			})
			recorded = value
			// The same value again (another annotation changes, so the
			// resource is reconciled): the next hand edit stays.
			hotfix := fmt.Sprintf("nginx:kept-%d", i)
			drift(t, hotfix)
			touched := fmt.Sprint(i)
			setAnnotation(t, ns, "api", "e2e.fedwarden.io/touched", &touched)
			waitForResyncs(t)
			if img, err := memberImage(t.Context(), member1, ns, "api"); err != nil || img != hotfix {
				t.Errorf("the same resync value re-applied the resource: image %s (%v), want %s kept", img, err, hotfix)
			}
		})
	}
	t.Run("an empty value", func(t *testing.T) {
		empty := ""
		setAnnotation(t, ns, "api", typesv1beta1.AnnotationResync, &empty)
		waitForResyncs(t)
		img, err := memberImage(t.Context(), member1, ns, "api")
		cpv, cerr := cpvOf(t.Context(), host, ns, "deployment-api")
		if err != nil || cerr != nil || !strings.HasPrefix(img, "nginx:kept-") || cpv.Status.Resync != recorded {
			t.Errorf("an empty resync value: image %s (%v), CPV status.resync %q (%v); want the hand edit kept and %q recorded", img, err, cpv.Status.Resync, cerr, recorded)
		}
	})
	if after := copiesOf(t, ns, "other"); fmt.Sprint(after) != fmt.Sprint(other) {
		t.Errorf("another resource's copies were touched:\nbefore %v\nafter  %v", other, after)
	}
	if after := copyStateOf(t, memberClient(t, 1), m2, ns, "api"); after.uid != api2.uid || after.generation != api2.generation || after.hash != api2.hash {
		t.Errorf("%s's copy changed: %v, was %v", m2, after, api2)
	}
}

// A template that the member's own admission refuses: a
// ValidatingAdmissionPolicy installed in the second member only, bound to
// the test's namespace, refuses Deployments of more than 2 replicas. A
// change to 3 replicas propagates to the first member; the second reports
// ApplyFailed with the policy's name and message, in the resource's
// Propagated condition and a Warning Event, and its copy stays as it was.
// Another resource is untouched. Removing the binding heals it.
func TestAMemberPolicyRefusesATemplate(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	member2 := memberClient(t, 1)

	name := "e2e-replicas-" + ns
	const message = "this member runs at most 2 replicas of a Deployment"
	policy, binding := fedtest.RefusingPolicy(name, ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}, "object.spec.replicas <= 2", message)
	t.Cleanup(func() {
		_ = member2.Delete(context.Background(), binding)
		_ = member2.Delete(context.Background(), policy)
	})

	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)))
	createObject(t, host, newFederatedDeployment(t, ns, "other", 0, placedOn(m1, m2)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	waitForCPV(t, host, ns, "deployment-other", "1", "1", m1, m2)
	createObject(t, member2, policy)
	createObject(t, member2, binding)
	// The member enforces a policy a moment after it is stored: a dry run
	// of what Fedwarden will send tells when.
	poll.Eventually(t, 30*time.Second, "the member's policy to be enforced", func(ctx context.Context) (bool, string) {
		d := memberDeployment(t, 1, ns, "other")
		d.Spec.Replicas = new(int32(3))
		err := member2.Update(ctx, d, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), message), fmt.Sprint(err)
	})
	before := copiesOf(t, ns, "web", "other")

	patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, int64(3), "spec", "template", "spec", "replicas")
	})
	want := "ValidatingAdmissionPolicy '" + name + "'"
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterPropagated},
		m2: {reason: typesv1beta1.ClusterApplyFailed, message: message},
	})
	waitForEvent(t, host, ns, "web", typesv1beta1.ClusterApplyFailed, "cluster "+m2, want, message)
	waitForResyncs(t)
	after := copiesOf(t, ns, "web", "other")
	for k, was := range before {
		if k == m1+"/web" {
			if after[k].uid != was.uid {
				t.Errorf("%s: the copy was replaced: %v, was %v", k, after[k], was)
			}
			continue
		}
		if after[k] != was {
			t.Errorf("%s: the copy was touched: %v, was %v", k, after[k], was)
		}
	}
	if d := memberDeployment(t, 0, ns, "web"); *d.Spec.Replicas != 3 {
		t.Errorf("%s: %d replicas, want 3", m1, *d.Spec.Replicas)
	}
	checkNoEventStorm(t, host, ns, "web")

	// Without the binding, the member takes it.
	if err := member2.Delete(t.Context(), binding); err != nil {
		t.Fatal(err)
	}
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterPropagated},
		m2: {reason: typesv1beta1.ClusterPropagated},
	})
}
