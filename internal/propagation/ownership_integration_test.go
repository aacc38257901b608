package propagation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
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
	poll.Eventually(t, propagated, "the new resource's CPV: member-1 ApplyFailed", func(ctx context.Context) (bool, string) {
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

// TestACopyWrittenBeforeTheOwnerStampIsNeitherRewrittenNorKept stands for
// an upgrade: a copy without fedwarden.io/owner-uid, as the releases
// before it wrote, is current as it is (the stamp is not in the desired
// hash, and its absence is no drift), so the member event that reveals it
// writes nothing; and, recorded by its resource's CPV, it is that
// resource's own: deleting the resource deletes it.
func TestACopyWrittenBeforeTheOwnerStampIsNeitherRewrittenNorKept(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "pre-stamp")
	fd := federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1}, nil)
	tb.create(t, fd)
	tb.waitForCPV(t, ns, "web", "1", "1", member1)
	d := tb.deployment(t, member1, ns, "web")
	unstamp := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, typesv1beta1.AnnotationOwnerUID)
	if err := tb.Members[member1].Patch(t.Context(), d, client.RawPatch(types.MergePatchType, []byte(unstamp))); err != nil {
		t.Fatal(err)
	}
	if _, stamped := d.Annotations[typesv1beta1.AnnotationOwnerUID]; stamped {
		t.Fatalf("the copy still carries %s after the patch", typesv1beta1.AnnotationOwnerUID)
	}
	// The patch is a member event: the resource is synced at once. Watch
	// for a write for a while after.
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(250 * time.Millisecond) {
		checkUntouched(t, tb, member1, d)
		if t.Failed() {
			t.FailNow()
		}
	}
	cpv := mustCPV(t, tb, ns, "web")
	if len(cpv.Status.ClusterVersions) != 1 || cpv.Status.ClusterVersions[0].State != typesv1beta1.InSync {
		t.Errorf("the CPV's entries %+v, want %s InSync (an unstamped copy is no drift)", cpv.Status.ClusterVersions, member1)
	}
	if err := tb.Host.Delete(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	tb.waitForAbsent(t, tb.Host, fd, "the host")
	tb.waitForAbsent(t, tb.Members[member1], d, member1)
}
