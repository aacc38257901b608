package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// createPastAdmission creates obj, a FederatedNamespace that breaks a rule
// Fedwarden enforces at admission and at run time. When the bed's admission
// policies refuse it (the policy's own tests check how), this bed of its
// own drops the bindings of the policies on types.kubefed.io and creates it
// then, as an object admitted before the policies existed would be: what is
// tested here is the run-time guard behind the admission one.
func (b *nsBed) createPastAdmission(t *testing.T, obj *unstructured.Unstructured) {
	t.Helper()
	err := b.host.Create(t.Context(), obj.DeepCopy())
	if err == nil {
		return
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) || !strings.Contains(strings.ToLower(err.Error()), "namespace") {
		t.Fatalf("creating FederatedNamespace %s/%s: %v; want it created, or refused by an admission policy about namespaces", obj.GetNamespace(), obj.GetName(), err)
	}
	t.Logf("admission refused FederatedNamespace %s/%s, as it should: %v", obj.GetNamespace(), obj.GetName(), err)
	if dropped := b.dropTypesPolicyBindings(t); dropped == 0 {
		t.Fatalf("no ValidatingAdmissionPolicy of types.kubefed.io is bound, yet the create was refused: %v", err)
	}
	poll.Eventually(t, 30*time.Second+loadSlack, "the create to pass admission without the policies", func(ctx context.Context) (bool, string) {
		err := b.host.Create(ctx, obj.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err)
	})
}

// dropTypesPolicyBindings deletes the bindings of every
// ValidatingAdmissionPolicy that matches types.kubefed.io, in this bed
// only, and returns how many it deleted.
func (b *nsBed) dropTypesPolicyBindings(t *testing.T) int {
	t.Helper()
	var policies admissionregistrationv1.ValidatingAdmissionPolicyList
	if err := b.host.List(t.Context(), &policies); err != nil {
		t.Fatal(err)
	}
	matched := map[string]bool{}
	for _, p := range policies.Items {
		if p.Spec.MatchConstraints == nil {
			continue
		}
		for _, rule := range p.Spec.MatchConstraints.ResourceRules {
			for _, g := range rule.APIGroups {
				if g == "types.kubefed.io" || g == "*" {
					matched[p.Name] = true
				}
			}
		}
	}
	var bindings admissionregistrationv1.ValidatingAdmissionPolicyBindingList
	if err := b.host.List(t.Context(), &bindings); err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for i := range bindings.Items {
		if binding := &bindings.Items[i]; matched[binding.Spec.PolicyName] {
			if err := b.host.Delete(t.Context(), binding); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			t.Logf("deleted ValidatingAdmissionPolicyBinding %s of policy %s in this test's own bed", binding.Name, binding.Spec.PolicyName)
			dropped++
		}
	}
	return dropped
}

// memberNamespace reads a member's namespace.
func (b *nsBed) memberNamespace(t *testing.T, member, name string) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := b.members[member].Get(t.Context(), types.NamespacedName{Name: name}, ns); err != nil {
		t.Fatalf("%s's namespace %s: %v", member, name, err)
	}
	return ns
}

// checkUntouched fails unless the member's namespace is the one of was,
// unchanged (same UID and resourceVersion), not being deleted and not
// marked as managed.
func (b *nsBed) checkUntouched(t *testing.T, member string, was *corev1.Namespace) {
	t.Helper()
	ns := b.memberNamespace(t, member, was.Name)
	if ns.UID != was.UID || ns.ResourceVersion != was.ResourceVersion || !ns.DeletionTimestamp.IsZero() || ns.Labels[typesv1beta1.LabelManaged] != "" {
		t.Errorf("%s's namespace %s was touched: UID %s (was %s), resourceVersion %s (was %s), deletionTimestamp %v, labels %v",
			member, was.Name, ns.UID, was.UID, ns.ResourceVersion, was.ResourceVersion, ns.DeletionTimestamp, ns.Labels)
	}
}

// deleteFederatedNamespace deletes a FederatedNamespace and waits until it
// is gone from the host.
func (b *nsBed) deleteFederatedNamespace(t *testing.T, namespace, name string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedNamespace")
	obj.SetNamespace(namespace)
	obj.SetName(name)
	if err := b.host.Delete(t.Context(), obj); err != nil {
		t.Fatalf("deleting FederatedNamespace %s/%s: %v", namespace, name, err)
	}
	waitForAbsent(t, b.host, obj, "the host", 45*time.Second+loadSlack)
}

// A tenant who may write FederatedNamespaces in namespace tenant cannot
// reach namespace payroll: a FederatedNamespace named payroll there (the
// issue's case: adopt, placed on the member) is never synced — condition,
// Event, no finalizer, no write — and deleting it leaves the member's
// payroll as it was. Federated for real by its own FederatedNamespace, with
// adopt, the member's existing payroll, holding a ConfigMap made in the
// member, is taken over; deleting that FederatedNamespace releases the
// namespace (managed label and Fedwarden's annotations removed) with its
// data, and deletes only a namespace Fedwarden created.
func TestATenantCannotReachANamespaceNotTheirs(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startNamespaceBed(t, 1)
	bed.enable(t, "namespaces")
	m := bed.Members[0].Name
	mc := bed.members[m]
	createObject(t, mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "payroll"}})
	createObject(t, mc, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "payroll", Name: "salaries"}, Data: map[string]string{"alice": "100"}})
	bed.hostNamespace(t, "tenant")
	bed.hostNamespace(t, "payroll")
	payroll := bed.memberNamespace(t, m, "payroll")

	// The tenant's FederatedNamespace named after payroll.
	bed.createPastAdmission(t, federatedNamespace(t, "tenant", "payroll", true, placedOn(m)))
	for _, cond := range []string{typesv1beta1.FederatedPropagated, typesv1beta1.FederatedScheduled} {
		waitForConditionOf(t, bed.host, "FederatedNamespace", "tenant", "payroll", cond, metav1.ConditionFalse, typesv1beta1.ReasonNameNotNamespace,
			"named payroll in namespace tenant: it is not synced")
	}
	waitForEvent(t, bed.host, "tenant", "payroll", typesv1beta1.ReasonNameNotNamespace+": ", "nothing is written to or deleted from any cluster")
	obj, _, err := statusOf(t.Context(), bed.host, "FederatedNamespace", "tenant", "payroll")
	if err != nil {
		t.Fatal(err)
	}
	if len(obj.GetFinalizers()) > 0 {
		t.Errorf("the refused FederatedNamespace got finalizers %v", obj.GetFinalizers())
	}
	if err := bed.host.Get(t.Context(), types.NamespacedName{Namespace: "tenant", Name: "namespace-payroll"}, &typesv1beta1.ClusterPropagatedVersion{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused FederatedNamespace has a ClusterPropagatedVersion (%v)", err)
	}
	bed.deleteFederatedNamespace(t, "tenant", "payroll")
	bed.checkUntouched(t, m, payroll)
	if writes := bed.cm.memberWrites(t); writes != 0 {
		t.Errorf("%v writes to the member, want none", writes)
	}

	// payroll's own FederatedNamespace adopts the member's payroll...
	createObject(t, bed.host, federatedNamespace(t, "payroll", "payroll", true, placedOn(m)))
	waitForConditionOf(t, bed.host, "FederatedNamespace", "payroll", "payroll", typesv1beta1.FederatedPropagated, metav1.ConditionTrue, typesv1beta1.ReasonPropagated)
	if ns := bed.memberNamespace(t, m, "payroll"); ns.Labels[typesv1beta1.LabelManaged] != "true" || ns.UID != payroll.UID {
		t.Fatalf("the member's payroll was not adopted: UID %s (was %s), labels %v", ns.UID, payroll.UID, ns.Labels)
	}
	// ... and deleting it releases the namespace, with its data.
	bed.deleteFederatedNamespace(t, "payroll", "payroll")
	poll.Eventually(t, 30*time.Second+loadSlack, "the member's payroll to be released", func(ctx context.Context) (bool, string) {
		ns := &corev1.Namespace{}
		if err := mc.Get(ctx, types.NamespacedName{Name: "payroll"}, ns); err != nil {
			return false, err.Error()
		}
		_, managed := ns.Labels[typesv1beta1.LabelManaged]
		_, hash := ns.Annotations[typesv1beta1.AnnotationDesiredHash]
		_, tv := ns.Annotations[typesv1beta1.AnnotationTemplateVersion]
		return !managed && !hash && !tv, fmt.Sprintf("labels %v, annotations %v", ns.Labels, ns.Annotations)
	})
	ns := bed.memberNamespace(t, m, "payroll")
	if ns.UID != payroll.UID || !ns.DeletionTimestamp.IsZero() {
		t.Fatalf("the member's payroll was replaced or is being deleted: UID %s (was %s), deletionTimestamp %v", ns.UID, payroll.UID, ns.DeletionTimestamp)
	}
	salaries := &corev1.ConfigMap{}
	if err := mc.Get(t.Context(), types.NamespacedName{Namespace: "payroll", Name: "salaries"}, salaries); err != nil || salaries.Data["alice"] != "100" {
		t.Fatalf("the member's payroll/salaries: %v, data %v", err, salaries.Data)
	}

	// A namespace Fedwarden created goes with its FederatedNamespace.
	bed.hostNamespace(t, "fresh")
	createObject(t, bed.host, federatedNamespace(t, "fresh", "fresh", false, placedOn(m)))
	waitForConditionOf(t, bed.host, "FederatedNamespace", "fresh", "fresh", typesv1beta1.FederatedPropagated, metav1.ConditionTrue, typesv1beta1.ReasonPropagated)
	if fresh := bed.memberNamespace(t, m, "fresh"); fresh.Annotations[typesv1beta1.AnnotationCreatedNamespace] != "true" || fresh.Labels[typesv1beta1.LabelManaged] != "true" {
		t.Fatalf("the member's fresh, which Fedwarden created: labels %v, annotations %v", fresh.Labels, fresh.Annotations)
	}
	bed.deleteFederatedNamespace(t, "fresh", "fresh")
	waitForAbsent(t, mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fresh"}}, m, 60*time.Second+loadSlack)
}

// No kube-* namespace is ever adopted, written or deleted: FederatedNamespaces
// of the member's kube-system and of kube-extra (a namespace made in the
// member, holding a ConfigMap), both with adopt, report SystemNamespace with
// an Event, and neither their creation nor their deletion writes anything to
// the member.
func TestAKubeNamespaceIsNeverAdoptedOrDeleted(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startNamespaceBed(t, 1)
	bed.enable(t, "namespaces")
	m := bed.Members[0].Name
	mc := bed.members[m]
	createObject(t, mc, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-extra"}})
	createObject(t, mc, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-extra", Name: "settings"}, Data: map[string]string{"a": "b"}})
	bed.hostNamespace(t, "kube-extra")
	names := []string{"kube-system", "kube-extra"}
	before := map[string]*corev1.Namespace{}
	for _, name := range names {
		before[name] = bed.memberNamespace(t, m, name)
		bed.createPastAdmission(t, federatedNamespace(t, name, name, true, placedOn(m)))
	}
	for _, name := range names {
		waitForConditionOf(t, bed.host, "FederatedNamespace", name, name, typesv1beta1.FederatedPropagated, metav1.ConditionFalse, typesv1beta1.ReasonSystemNamespace,
			name+" is a Kubernetes system namespace: Fedwarden never adopts, writes or deletes a kube-* namespace")
		waitForEvent(t, bed.host, name, name, typesv1beta1.ReasonSystemNamespace+": ", name)
	}
	for _, name := range names {
		bed.deleteFederatedNamespace(t, name, name)
		bed.checkUntouched(t, m, before[name])
	}
	if err := mc.Get(t.Context(), client.ObjectKey{Namespace: "kube-extra", Name: "settings"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("the member's kube-extra/settings: %v", err)
	}
	if writes := bed.cm.memberWrites(t); writes != 0 {
		t.Errorf("%v writes to the member, want none", writes)
	}
}
