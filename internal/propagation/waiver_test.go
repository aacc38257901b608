package propagation

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// TestDecideWriteUnderAWaiver: a hand edit of a waived path in a waived
// cluster is kept, even under Enforce, and is Waived with the waiver; an
// edit of another path is written back, keeping the waived one's member
// value; an expired waiver, one of another cluster and one that expires
// too far ahead keep nothing.
func TestDecideWriteUnderAWaiver(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)
	desired := deploymentCopy(2)
	hash := render.ContentHash(desired.Object)
	edited := stampedCopy(desired, hash)
	_ = unstructured.SetNestedField(edited.Object, int64(5), "spec", "replicas")
	edited.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{}}}`),
	}})
	both := edited.DeepCopy()
	_ = unstructured.SetNestedField(both.Object, true, "spec", "paused")
	both.SetManagedFields([]metav1.ManagedFieldsEntry{{
		Manager: "kubectl-scale", Operation: metav1.ManagedFieldsOperationUpdate, FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:replicas":{},"f:paused":{}}}`),
	}})
	_ = unstructured.SetNestedField(desired.Object, false, "spec", "paused")
	hash = render.ContentHash(desired.Object)
	edited = stampedCopy(edited, hash)
	both = stampedCopy(both, hash)
	waiver := func(cluster string, expires time.Time) *typesv1beta1.DriftPolicy {
		return &typesv1beta1.DriftPolicy{Remediation: typesv1beta1.RemediationEnforce, Waivers: []typesv1beta1.DriftWaiver{{
			Clusters: []typesv1beta1.ClusterName{typesv1beta1.ClusterName(cluster)}, Paths: []typesv1beta1.JSONPointer{"/spec/replicas"},
			Expires: metav1.NewTime(expires), Reason: "valve maintenance", Owner: "ops@example.com",
		}}}
	}
	written := typesv1beta1.ClusterVersion{ClusterName: "a", Version: "42", State: typesv1beta1.InSync}
	for _, tt := range []struct {
		name   string
		live   *unstructured.Unstructured
		policy *typesv1beta1.DriftPolicy
		want   Action
		state  typesv1beta1.DriftState
		paths  string
		reason string
	}{
		{"waived", edited, waiver("a", now.Add(time.Hour)), ActionUnchanged, typesv1beta1.Waived, "/spec/replicas",
			"by kubectl-scale: /spec/replicas; kept: waived until 2026-12-20T13:00:00Z (valve maintenance, ops@example.com)"},
		{"waived, and another path edited", both, waiver("a", now.Add(time.Hour)), ActionUpdate, typesv1beta1.ModifiedOutOfBand, "/spec/paused", "written back"},
		{"expired", edited, waiver("a", now.Add(-time.Second)), ActionUpdate, typesv1beta1.ModifiedOutOfBand, "/spec/replicas", "written back"},
		{"expires just now", edited, waiver("a", now), ActionUpdate, typesv1beta1.ModifiedOutOfBand, "/spec/replicas", "written back"},
		{"another cluster's", edited, waiver("b", now.Add(time.Hour)), ActionUpdate, typesv1beta1.ModifiedOutOfBand, "/spec/replicas", "written back"},
		{"too far ahead", edited, waiver("a", now.Add(31*24*time.Hour)), ActionUpdate, typesv1beta1.ModifiedOutOfBand, "/spec/replicas", "written back"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			policy := drift.PolicyFor(tt.policy, "a", nil, typesv1beta1.RemediationEnforce)
			d, err := DecideWrite(Copy{Type: deploymentType, Fed: planned(false), Versions: render.Versions{Template: "2", Override: "1"},
				Previous: written, Recorded: true, Desired: desired, Live: tt.live, Policy: policy, Now: now})
			paths, _ := drift.Paths(d.Changes)
			if err != nil || d.Action != tt.want || d.State != tt.state || strings.Join(paths, ",") != tt.paths || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("DecideWrite: %+v, %v; want %s, %s of %s, with %q", d, err, tt.want, tt.state, tt.paths, tt.reason)
			}
			if (d.State == typesv1beta1.Waived) != (d.Waiver != nil) {
				t.Errorf("Waiver %+v for state %s", d.Waiver, d.State)
			}
		})
	}
}

// TestAWriteKeepsTheWaivedValues: the object a write applies has the
// member's values at the retained paths, and its hash is desired's.
func TestAWriteKeepsTheWaivedValues(t *testing.T) {
	t.Parallel()
	desired := deploymentCopy(2)
	live := deploymentCopy(5)
	_ = unstructured.SetNestedField(live.Object, "hotfix", "metadata", "labels", "patched")
	out := stamped(desired, live, []string{"/spec/replicas", "/metadata/labels/patched", "/spec/absent"}, render.Versions{Template: "1", Override: "1"}, "uid")
	if n, _, _ := unstructured.NestedInt64(out.Object, "spec", "replicas"); n != 5 {
		t.Errorf("replicas written: %d, want the member's 5", n)
	}
	if v := out.GetLabels()["patched"]; v != "hotfix" {
		t.Errorf("label written: %q, want the member's", v)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "absent"); found {
		t.Errorf("a path the member lacks was added")
	}
	if got := out.GetAnnotations()[typesv1beta1.AnnotationDesiredHash]; got != render.ContentHash(desired.Object) {
		t.Errorf("hash %s, want desired's", got)
	}
	if n, _, _ := unstructured.NestedInt64(desired.Object, "spec", "replicas"); n != 2 {
		t.Errorf("desired was changed: %d replicas", n)
	}
}

// TestUntilExpiry: a resource with a waiver ahead is synced again just
// after it expires, unless it is synced sooner anyway.
func TestUntilExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)
	spec := render.Spec{DriftPolicy: &typesv1beta1.DriftPolicy{Waivers: []typesv1beta1.DriftWaiver{
		{Expires: metav1.NewTime(now.Add(-time.Minute))},
		{Expires: metav1.NewTime(now.Add(30 * time.Second))},
		{Expires: metav1.NewTime(now.Add(time.Hour))},
	}}}
	if got := untilExpiry(reconcileResult(10*time.Minute), spec, now).RequeueAfter; got != 30*time.Second+100*time.Millisecond {
		t.Errorf("RequeueAfter = %s, want just after the next expiry", got)
	}
	if got := untilExpiry(reconcileResult(10*time.Second), spec, now).RequeueAfter; got != 10*time.Second {
		t.Errorf("RequeueAfter = %s, want the sooner 10s kept", got)
	}
	if got := untilExpiry(reconcileResult(0), spec, now).RequeueAfter; got != 30*time.Second+100*time.Millisecond {
		t.Errorf("with no resync: RequeueAfter = %s, want the expiry's", got)
	}
	if got := untilExpiry(reconcileResult(time.Minute), render.Spec{}, now).RequeueAfter; got != time.Minute {
		t.Errorf("without waivers: RequeueAfter = %s", got)
	}
}

func reconcileResult(after time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: after}
}
