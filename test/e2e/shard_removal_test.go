//go:build unix

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedwarden/fedwarden/test/poll"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// Two replicas with --share-clusters, three Push members and a Pull member:
// a resource placed on all four reaches them and a change follows, the
// Pull cluster through its agent while the replicas share the others. A
// placement that drops a Push cluster and the Pull cluster removes their
// copies (the serving replica and the agent, told by the leader's CPV),
// and deleting the resource removes the rest. This test runs its own
// controller-managers, so it has a bed of its own.
func TestSharedMembersRemoveOnPlacementAndDeletion(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(4), localfed.WithLeanMembers(), localfed.WithControllers(fedtest.JoinControllers...))
	host := bed.Host
	for i := range 2 {
		name := fmt.Sprintf("replica-%d", i)
		startControllerManager(t, bed, steadyProbes, "--share-clusters", "--replica-name", name,
			"--replica-lease-duration", "6s", "--replica-renew-deadline", "4s", "--replica-retry-period", "1s")
	}
	var names []string
	for _, m := range bed.Fed.Members[:3] {
		bed.Join(t, m)
		names = append(names, m.Name)
	}
	pull := bed.Fed.Members[3].Name
	bed.JoinPull(t, pull)
	enableDeploymentsIn(t, host)
	all := append(names, pull)
	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "web", 1, placedOn(all...)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", all...)
	patchFederated(t, host, ns, "web", setImage(t, "nginx:1.28"))
	imageEverywhere(t, bed, ns, "web", "nginx:1.28", all)
	waitForCPV(t, host, ns, "deployment-web", "2", "1", all...)
	// Placement drops one Push cluster and the Pull cluster.
	patchFederated(t, host, ns, "web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"name": names[0]}, map[string]any{"name": names[1]}}, "spec", "placement", "clusters")
	})
	waitForCPV(t, host, ns, "deployment-web", "2", "1", names[0], names[1])
	for _, gone := range []string{names[2], pull} {
		poll.Eventually(t, 60*time.Second, "the copy in "+gone+" to go", func(ctx context.Context) (bool, string) {
			d := &appsv1.Deployment{}
			err := bed.Members[gone].Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
	// Deleting the resource deletes the remaining copies, wherever they are
	// served.
	if err := host.Delete(t.Context(), newFederatedDeployment(t, ns, "web", 1, "")); err != nil {
		t.Fatal(err)
	}
	for _, gone := range names[:2] {
		poll.Eventually(t, 60*time.Second, "the copy in "+gone+" to go", func(ctx context.Context) (bool, string) {
			d := &appsv1.Deployment{}
			err := bed.Members[gone].Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	}
}
