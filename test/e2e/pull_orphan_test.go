package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// gitopsFinalizer stands for the finalizer a GitOps tool adds to what it
// applies: it holds a deleted resource, deletion timestamp set, until the
// tool lets it go.
const gitopsFinalizer = "gitops.example.com/prune"

// The case 3 (issue 28), in Push and Pull: FederatedDeployment x
// is placed on a Push and a Pull member, then deleted with
// kubefed.io/orphan: both copies stay. A new x, placed on no cluster and
// held by a finalizer of the user's, is then deleted: neither the host nor
// the Pull cluster's agent deletes a copy it never placed (before, the
// agent deleted the orphaned copy in its cluster). A third x placed on
// both takes the copies over (they then carry its UID), and its deletion
// deletes them: a resource deletes exactly the copies it placed.
func TestADeletedResourceNeverDeletesAnotherResourcesOrphanedCopy(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startPullBed(t)
	ns := testNamespace(t, b.host)
	const name, cpvName = "x", "deployment-x"
	members := map[string]client.Client{b.push.Name: newClient(t, b.push.Config), b.pull.Name: newClient(t, b.pull.Config)}

	earlier := newFederatedDeployment(t, ns, name, 1, placedOn(b.push.Name, b.pull.Name))
	earlier.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	createObject(t, b.host, earlier)
	waitForCPV(t, b.host, ns, cpvName, "1", "1", b.pull.Name, b.push.Name)
	checkOwnerStamps(t, members, ns, name, earlier.GetUID())
	// The members run no controllers: a copy's resourceVersion moves only
	// when Fedwarden writes it.
	orphaned := copyIdentities(t, members, ns, name)

	t.Run("deleted with its copies orphaned, the copies stay", func(t *testing.T) {
		deleteFederated(t, b.host, earlier)
		checkCopiesUntouched(t, members, ns, name, orphaned)
	})

	t.Run("a new resource of the name, placed nowhere and deleted, deletes neither copy", func(t *testing.T) {
		later := newFederatedDeployment(t, ns, name, 1, placedOn())
		later.SetFinalizers([]string{gitopsFinalizer})
		createObject(t, b.host, later)
		t.Cleanup(func() { releaseFinalizer(t, b.host, later) })
		// The host has synced it: the sync finalizer, and a CPV of its own
		// that places it nowhere.
		poll.Eventually(t, 60*time.Second, "the new resource synced, with a CPV of its own", func(ctx context.Context) (bool, string) {
			if err := b.host.Get(ctx, client.ObjectKeyFromObject(later), later); err != nil {
				return false, err.Error()
			}
			cpv, err := cpvOf(ctx, b.host, ns, cpvName)
			if err != nil {
				return false, err.Error()
			}
			own := len(cpv.OwnerReferences) == 1 && cpv.OwnerReferences[0].UID == later.GetUID()
			return own && slices.Contains(later.GetFinalizers(), typesv1beta1.FinalizerSync),
				fmt.Sprintf("finalizers %v, CPV owners %v, spec.clusters %v", later.GetFinalizers(), cpv.OwnerReferences, cpv.Spec.Clusters)
		})
		if err := b.host.Delete(t.Context(), later); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, 60*time.Second, "the host done with the deletion (its finalizer removed)", func(ctx context.Context) (bool, string) {
			if err := b.host.Get(ctx, client.ObjectKeyFromObject(later), later); err != nil {
				return false, err.Error()
			}
			return slices.Equal(later.GetFinalizers(), []string{gitopsFinalizer}), fmt.Sprintf("finalizers %v", later.GetFinalizers())
		})
		// The resource stays, deleted, while the user's finalizer holds it:
		// the agent (resync every 5 s) sees it being deleted. Before the
		// fix its copy went within a second.
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(500 * time.Millisecond) {
			for m, c := range members {
				d := &appsv1.Deployment{}
				err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d)
				if err != nil || string(d.UID) != orphaned[m].uid || d.DeletionTimestamp != nil {
					t.Fatalf("%s after the new resource was deleted: %s's orphaned copy is gone or replaced: %v, uid %s (was %s), deletionTimestamp %v",
						time.Since(start).Round(time.Millisecond), m, err, d.UID, orphaned[m].uid, d.DeletionTimestamp)
				}
			}
		}
		releaseFinalizer(t, b.host, later)
		waitForAbsent(t, b.host, later, "the host", 60*time.Second)
		collectCPV(t, b.host, later)
		checkCopiesUntouched(t, members, ns, name, orphaned)
		checkOwnerStamps(t, members, ns, name, earlier.GetUID())
	})

	t.Run("a resource that takes the copies over deletes them", func(t *testing.T) {
		taker := newFederatedDeployment(t, ns, name, 1, placedOn(b.push.Name, b.pull.Name))
		createObject(t, b.host, taker)
		waitForCPV(t, b.host, ns, cpvName, "1", "1", b.pull.Name, b.push.Name)
		poll.Eventually(t, 60*time.Second, "the copies stamped with the new resource's UID", func(ctx context.Context) (bool, string) {
			stamps := ownerStamps(ctx, members, ns, name)
			return stamps[b.push.Name] == string(taker.GetUID()) && stamps[b.pull.Name] == string(taker.GetUID()), fmt.Sprintf("stamps %v, want %s", stamps, taker.GetUID())
		})
		deleteFederated(t, b.host, taker)
		for m, c := range members {
			waitForAbsent(t, c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, m, 60*time.Second)
		}
	})
}

// deleteFederated deletes fed from the host and waits until it is gone,
// then collects its CPV (collectCPV).
func deleteFederated(t *testing.T, host client.Client, fed *unstructured.Unstructured) {
	t.Helper()
	if err := host.Delete(t.Context(), fed); err != nil {
		t.Fatal(err)
	}
	waitForAbsent(t, host, fed, "the host", 60*time.Second)
	collectCPV(t, host, fed)
}

// collectCPV deletes the CPV of fed, which is gone, as the host's garbage
// collector would (the pull bed runs none): the next resource of the name
// then gets a CPV of its own.
func collectCPV(t *testing.T, host client.Client, fed *unstructured.Unstructured) {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{ObjectMeta: metav1.ObjectMeta{Namespace: fed.GetNamespace(), Name: "deployment-" + fed.GetName()}}
	if err := host.Delete(t.Context(), cpv); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitForAbsent(t, host, cpv, "the host", 30*time.Second)
}

// releaseFinalizer removes the user's finalizer from fed, if it is there.
func releaseFinalizer(t *testing.T, host client.Client, fed *unstructured.Unstructured) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj := fed.DeepCopy()
		if err := host.Get(context.Background(), client.ObjectKeyFromObject(fed), obj); err != nil {
			return err
		}
		if !slices.Contains(obj.GetFinalizers(), gitopsFinalizer) {
			return nil
		}
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == gitopsFinalizer }))
		return host.Update(context.Background(), obj)
	})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("removing the finalizer %s: %v", gitopsFinalizer, err)
	}
}

// ownerStamps reads each member copy's fedwarden.io/owner-uid, by member.
func ownerStamps(ctx context.Context, members map[string]client.Client, namespace, name string) map[string]string {
	out := map[string]string{}
	for m, c := range members {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			out[m] = err.Error()
			continue
		}
		out[m] = d.Annotations[typesv1beta1.AnnotationOwnerUID]
	}
	return out
}

// checkOwnerStamps fails the test unless every member copy carries uid as
// the UID of the resource that wrote it.
func checkOwnerStamps(t *testing.T, members map[string]client.Client, namespace, name string, uid types.UID) {
	t.Helper()
	for m, stamp := range ownerStamps(t.Context(), members, namespace, name) {
		if stamp != string(uid) {
			t.Errorf("%s: the copy's %s is %q, want %s", m, typesv1beta1.AnnotationOwnerUID, stamp, uid)
		}
	}
}
