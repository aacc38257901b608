package propagation_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/poll"
)

// The tests of this file check, on the shared test bed, that the member
// informers cache copies cut down to what a sync reads, and that drift
// detection sees in them what it would see in the whole copies.

// TestDriftInAFieldAnotherManagerOwnsIsSeenInAProjectedCopy lets a second
// field manager share the image of a copy, then change it: the controller,
// reading the copy from its informer, reports the drift with that
// manager's name, and leaves it (Alert).
func TestDriftInAFieldAnotherManagerOwnsIsSeenInAProjectedCopy(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "projected-drift")
	fd := federatedDeployment(t, ns, "shared", "nginx:1.27", []string{member1}, nil)
	if err := unstructured.SetNestedField(fd.Object, string(typesv1beta1.RemediationAlert), "spec", "driftPolicy", "remediation"); err != nil {
		t.Fatal(err)
	}
	tb.create(t, fd)
	tb.waitForCPV(t, ns, "shared", "1", "1", member1)
	tb.waitForCached(t, member1, ns, "shared", "a projected copy", func(u *unstructured.Unstructured) (bool, string) {
		return propagation.Projected(u), "not projected"
	})

	// The same image: ops-tool shares the field with Fedwarden, no drift.
	tb.applyImage(t, member1, ns, "shared", "ops-tool", "nginx:1.27")
	tb.waitForCached(t, member1, ns, "shared", "the copy with ops-tool's managed fields", func(u *unstructured.Unstructured) (bool, string) {
		return propagation.Projected(u) && hasManager(u, "ops-tool"), fmt.Sprintf("projected %t, managers %v", propagation.Projected(u), managers(u))
	})
	// Another image: the field ops-tool owns changed.
	tb.applyImage(t, member1, ns, "shared", "ops-tool", "nginx:ops")
	poll.Eventually(t, propagated, "the CPV entry of "+member1+" to say ops-tool changed the image", func(ctx context.Context) (bool, string) {
		cpv, err := tb.cpv(ctx, ns, "shared")
		if err != nil {
			return false, err.Error()
		}
		cv := entry(cpv, member1)
		return cv.State == typesv1beta1.ModifiedOutOfBand && slices.Equal(cv.ChangedPaths, []string{imagePath}) && slices.Equal(cv.ChangedBy, []string{"ops-tool"}),
			fmt.Sprintf("%+v", cv)
	})
	tb.waitForEvent(t, ns, "shared", typesv1beta1.EventDriftDetected, member1, "changed in the member by ops-tool", imagePath, "left as it is")
	if img := tb.deployment(t, member1, ns, "shared").Spec.Template.Spec.Containers[0].Image; img != "nginx:ops" {
		t.Errorf("%s: image %s under Alert, want ops-tool's nginx:ops left as it is", member1, img)
	}
	tb.waitForCached(t, member1, ns, "shared", "the projected copy with ops-tool's image", func(u *unstructured.Unstructured) (bool, string) {
		img := image(u)
		return propagation.Projected(u) && img == "nginx:ops", fmt.Sprintf("projected %t, image %q", propagation.Projected(u), img)
	})
}

// TestAServerDefaultIsNotCachedAndIsNoDrift checks that the informer's
// copy lacks fields the member's API server defaulted, which nobody owns,
// and that syncs reading it find no drift: a change of the resource that
// leaves one member's content as it is writes nothing there, and the CPV
// records that member InSync.
func TestAServerDefaultIsNotCachedAndIsNoDrift(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "projected-defaults")
	tb.create(t, federatedDeployment(t, ns, "defaulted", "nginx:1.27", []string{member1, member2}, nil))
	tb.waitForCPV(t, ns, "defaulted", "1", "1", member1, member2)

	live := tb.deployment(t, member1, ns, "defaulted")
	if live.Spec.ProgressDeadlineSeconds == nil || live.Spec.Template.Spec.Containers[0].TerminationMessagePath == "" {
		t.Fatalf("%s: the copy lacks the server's defaults: %+v", member1, live.Spec)
	}
	defaults := [][]string{
		{"spec", "progressDeadlineSeconds"},
		{"spec", "revisionHistoryLimit"},
		{"spec", "strategy"},
		{"spec", "template", "spec", "dnsPolicy"},
	}
	cached := tb.waitForCached(t, member1, ns, "defaulted", "a projected copy", func(u *unstructured.Unstructured) (bool, string) {
		return propagation.Projected(u), "not projected"
	})
	for _, path := range defaults {
		if v, found, _ := unstructured.NestedFieldNoCopy(cached.Object, path...); found {
			t.Errorf("the cached copy holds the server's default %v: %v", path, v)
		}
	}
	containers, _, _ := unstructured.NestedSlice(cached.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 || containers[0].(map[string]any)["terminationMessagePath"] != nil || image(cached) != "nginx:1.27" {
		t.Errorf("the cached containers %v: want the image Fedwarden set, without terminationMessagePath", containers)
	}
	if r, _, _ := unstructured.NestedInt64(cached.Object, "spec", "replicas"); r != 1 || cached.GetResourceVersion() != live.ResourceVersion {
		t.Errorf("the cached copy: replicas %d, resourceVersion %s; want 1 and the copy's %s", r, cached.GetResourceVersion(), live.ResourceVersion)
	}

	// An override for member-2 syncs the resource; member-1's copy, read
	// from the cache, is current as it is.
	tb.patch(t, ns, "defaulted", fmt.Sprintf(`{"spec":{"overrides":[{"clusterName":%q,"clusterOverrides":[{"path":"/spec/replicas","value":2}]}]}}`, member2))
	cpv := tb.waitForCPV(t, ns, "defaulted", "1", "2", member1, member2)
	if cv := entry(cpv, member1); len(cv.ChangedPaths) != 0 || cv.DriftedSince != nil {
		t.Errorf("%s: CPV entry %+v, want no drift", member1, cv)
	}
	if after := tb.deployment(t, member1, ns, "defaulted"); after.ResourceVersion != live.ResourceVersion {
		t.Errorf("%s: the copy was written (resourceVersion %s → %s), want it left as it is", member1, live.ResourceVersion, after.ResourceVersion)
	}
	if r := tb.deployment(t, member2, ns, "defaulted").Spec.Replicas; r == nil || *r != 2 {
		t.Errorf("%s: replicas %v, want the override's 2", member2, r)
	}
}

// waitForCached waits, as what, until the controller's informer of member
// holds the copy namespace/name and ok says it is as wanted; it returns it.
func (tb bed) waitForCached(t *testing.T, member, namespace, name, what string, ok func(*unstructured.Unstructured) (bool, string)) *unstructured.Unstructured {
	t.Helper()
	var cached *unstructured.Unstructured
	poll.Eventually(t, propagated, what+" in the informer of "+member, func(context.Context) (bool, string) {
		u, found := controller.CachedCopy(member, namespace+"/"+name)
		if !found {
			return false, "not cached"
		}
		cached = u
		return ok(u)
	})
	return cached
}

// applyImage sets the image of the copy in member with server-side apply,
// as manager, taking the field over from whoever owns it.
func (tb bed) applyImage(t *testing.T, member, namespace, name, manager, img string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "web", "image": img}},
		}}},
	}}
	if err := tb.Members[member].Apply(t.Context(), client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		t.Fatalf("%s: applying image %s as %s: %v", member, img, manager, err)
	}
}

func image(u *unstructured.Unstructured) string {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	img, _ := containers[0].(map[string]any)["image"].(string)
	return img
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, e := range u.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return out
}

func hasManager(u *unstructured.Unstructured, manager string) bool {
	return slices.ContainsFunc(u.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool { return e.Manager == manager })
}
