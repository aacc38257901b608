package propagation_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// TestARecreatedResourceLeavesTheEarlierOnesCopies deletes a resource
// placed on member-1 and member-2 with its copies orphaned, and creates one
// of the same name placed on member-1 only while the earlier one's CPV is
// still there (the bed runs no garbage collector: it stays until the test
// deletes it, as the collector would, a moment later in a cluster). The new
// resource writes nothing while that CPV is there, and says why; once it is
// gone, the new resource is propagated to member-1 with a CPV of its own,
// and member-2's orphaned copy is never deleted: the new resource never had
// it.
func TestARecreatedResourceLeavesTheEarlierOnesCopies(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "recreate")
	earlier := federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1, member2}, nil)
	earlier.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	tb.create(t, earlier)
	tb.waitForCPV(t, ns, "web", "1", "1", member1, member2)
	orphaned := tb.deployment(t, member2, ns, "web")
	if err := tb.Host.Delete(t.Context(), earlier); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, tb.Host, earlier, "the host")
	stale := mustCPV(t, tb, ns, "web")

	later := federatedDeployment(t, ns, "web", "nginx:1.28", []string{member1}, nil)
	tb.create(t, later)
	tb.waitForCondition(t, ns, "web", typesv1beta1.FederatedPropagated, "belongs to an earlier FederatedDeployment", string(earlier.GetUID()), "garbage collector")
	if got := tb.deployment(t, member1, ns, "web"); got.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("%s's copy was written while the earlier resource's CPV was there: image %s", member1, got.Spec.Template.Spec.Containers[0].Image)
	}
	checkUntouched(t, tb, member2, orphaned)

	// The garbage collector's part.
	if err := tb.Host.Delete(t.Context(), stale); err != nil {
		t.Fatal(err)
	}
	cpv := tb.waitForCPV(t, ns, "web", "1", "1", member1)
	if ref := cpv.OwnerReferences; len(ref) != 1 || ref[0].UID != later.GetUID() {
		t.Errorf("the new CPV's owner: %+v, want the new resource (UID %s)", ref, later.GetUID())
	}
	if got := tb.deployment(t, member1, ns, "web"); got.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
		t.Errorf("%s's copy has image %s, want the new resource's nginx:1.28", member1, got.Spec.Template.Spec.Containers[0].Image)
	}
	checkUntouched(t, tb, member2, orphaned)
}

// checkUntouched fails the test unless member still has was as it was.
func checkUntouched(t *testing.T, tb bed, member string, was *appsv1.Deployment) {
	t.Helper()
	got := &appsv1.Deployment{}
	if err := tb.Members[member].Get(t.Context(), types.NamespacedName{Namespace: was.Namespace, Name: was.Name}, got); err != nil {
		t.Fatalf("%s: the orphaned copy: %v", member, err)
	}
	if got.UID != was.UID || got.ResourceVersion != was.ResourceVersion || got.DeletionTimestamp != nil {
		t.Errorf("%s: the orphaned copy was touched: UID %s → %s, resourceVersion %s → %s, deletionTimestamp %v",
			member, was.UID, got.UID, was.ResourceVersion, got.ResourceVersion, got.DeletionTimestamp)
	}
}
