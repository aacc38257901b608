package propagation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// keepFinalizersMessage is the refusal of the policy keepFinalizers
// installs.
const keepFinalizersMessage = "test: no finalizer may be removed in this namespace"

// TestADeletionThatCannotRemoveItsFinalizerSaysWhy deletes a
// FederatedDeployment whose finalizer the host's API server refuses to
// remove (a ValidatingAdmissionPolicy of the test's namespace): the
// deletion stops on that error, and the resource's Propagated condition
// says so (DeletionFailed, quoting the API server), instead of nothing. Once
// the policy is gone, the retry lets the resource go.
func TestADeletionThatCannotRemoveItsFinalizerSaysWhy(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "delfail")
	fd := federatedDeployment(t, ns, "stuck", "nginx:1.27", []string{member1}, nil)
	tb.create(t, fd)
	tb.waitForCPV(t, ns, "stuck", "1", "1", member1)
	if err := tb.Host.Get(t.Context(), client.ObjectKeyFromObject(fd), fd); err != nil {
		t.Fatal(err)
	}
	unbind := tb.keepFinalizers(t, ns, fd)

	if err := tb.Host.Delete(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	c := tb.waitForCondition(t, ns, "stuck", typesv1beta1.FederatedPropagated, "removing the finalizer", keepFinalizersMessage)
	if c.Reason != typesv1beta1.ReasonDeletionFailed || c.Status != metav1.ConditionFalse {
		t.Errorf("Propagated condition: got %s %s, want False %s: %s", c.Status, c.Reason, typesv1beta1.ReasonDeletionFailed, c.Message)
	}
	// The copy was the user's to delete, and is deleted all the same.
	tb.waitForAbsent(t, tb.Members[member1], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stuck"}}, member1)

	unbind()
	// The controller retries with a growing backoff: the bound leaves room
	// for it.
	poll.Eventually(t, 3*time.Minute, fmt.Sprintf("%s/stuck to be gone from the host", ns), func(ctx context.Context) (bool, string) {
		err := tb.Host.Get(ctx, client.ObjectKeyFromObject(fd), fd.DeepCopy())
		return apierrors.IsNotFound(err), fmt.Sprintf("still there (%v)", err)
	})
}

// keepFinalizers installs a ValidatingAdmissionPolicy, bound to namespace
// ns, that refuses any update of a FederatedDeployment removing a
// finalizer, and waits until the API server enforces it: until a dry-run
// removal of fed's finalizers is refused. It returns a function that
// removes the binding and waits until the API server lets such an update
// through again; the test's cleanup removes the policy and the binding.
func (tb bed) keepFinalizers(t *testing.T, ns string, fed *unstructured.Unstructured) func() {
	t.Helper()
	ctx := t.Context()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "keep-finalizers-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{typesv1beta1.GroupVersion.Group}, APIVersions: []string{"*"}, Resources: []string{"federateddeployments"}},
				}}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(oldObject.metadata.finalizers) || (has(object.metadata.finalizers) && oldObject.metadata.finalizers.all(f, f in object.metadata.finalizers))",
				Message:    keepFinalizersMessage,
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	for _, obj := range []client.Object{policy, binding} {
		tb.create(t, obj)
		t.Cleanup(func() {
			if err := tb.Host.Delete(context.WithoutCancel(ctx), obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting %T %s: %v", obj, obj.GetName(), err)
			}
		})
	}
	refused := func(ctx context.Context) error {
		probe := fed.DeepCopy()
		probe.SetFinalizers(nil)
		return tb.Host.Patch(ctx, probe, client.MergeFrom(fed), client.DryRunAll)
	}
	poll.Eventually(t, propagated, "the policy to be enforced", func(ctx context.Context) (bool, string) {
		err := refused(ctx)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err), fmt.Sprintf("a dry-run removal of the finalizers: %v", err)
	})
	return func() {
		t.Helper()
		if err := tb.Host.Delete(ctx, binding); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, propagated, "the policy to be unbound", func(ctx context.Context) (bool, string) {
			err := refused(ctx)
			return err == nil || apierrors.IsNotFound(err), fmt.Sprintf("a dry-run removal of the finalizers: %v", err)
		})
	}
}
