package propagation_test

import (
	"context"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/inprocess"
)

// TestADeletedResourceNeverDeletesAnOrphanedCopyItNeverWrote is the
// issue's case 3 (issue 28) in Push mode, where the host deletes: a
// resource placed on member-1 is deleted with its copy orphaned. A new
// resource of the same name is placed on member-1, but its override for
// member-1 fails, so it never writes there; it is then deleted. The
// orphaned copy, which carries the earlier resource's UID, stays as it
// is: a resource deletes only the copies it wrote (before, the host
// deleted any managed copy of the name in a cluster the placement named).
func TestADeletedResourceNeverDeletesAnOrphanedCopyItNeverWrote(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "orphan-stamp")
	earlier := federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1}, nil)
	earlier.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	tb.create(t, earlier)
	tb.waitForCPV(t, ns, "web", "1", "1", member1)
	orphaned := tb.deployment(t, member1, ns, "web")
	if stamp := orphaned.Annotations[typesv1beta1.AnnotationOwnerUID]; stamp != string(earlier.GetUID()) {
		t.Errorf("the copy's %s is %q, want the UID of the resource that wrote it, %s", typesv1beta1.AnnotationOwnerUID, stamp, earlier.GetUID())
	}
	if err := tb.Host.Delete(t.Context(), earlier); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, tb.Host, earlier, "the host")
	// The garbage collector's part (the bed runs none).
	stale := mustCPV(t, tb, ns, "web")
	if err := tb.Host.Delete(t.Context(), stale); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, tb.Host, stale, "the host")

	later := federatedDeployment(t, ns, "web", "nginx:1.28", []string{member1}, nil)
	failing := []any{map[string]any{"clusterName": member1, "clusterOverrides": []any{map[string]any{"op": "remove", "path": "/spec/paused"}}}}
	if err := unstructured.SetNestedSlice(later.Object, failing, "spec", "overrides"); err != nil {
		t.Fatal(err)
	}
	tb.create(t, later)
	inprocess.Eventually(t, propagated, "the new resource's CPV: member-1 ApplyFailed", func(ctx context.Context) (bool, string) {
		cpv, err := tb.cpv(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		own := len(cpv.OwnerReferences) == 1 && cpv.OwnerReferences[0].UID == later.GetUID()
		return own && len(cpv.Status.ClusterVersions) == 1 && cpv.Status.ClusterVersions[0].State == typesv1beta1.ApplyFailed,
			fmt.Sprintf("owners %v, entries %+v", cpv.OwnerReferences, cpv.Status.ClusterVersions)
	})
	checkUntouched(t, tb, member1, orphaned)
	if err := tb.Host.Delete(t.Context(), later); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, tb.Host, later, "the host")
	checkUntouched(t, tb, member1, orphaned)
}
