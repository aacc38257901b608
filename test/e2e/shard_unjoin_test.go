//go:build unix

package e2e

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// Two replicas with --share-clusters and three members: unjoining two
// clusters (one of them served by the replica that does not lead) while a
// resource is placed on them leaves their copies as they are, neither
// deleted nor written again; the CPV forgets them, and a change reaches
// the cluster that stays.
func TestUnjoiningSharedClustersLeavesTheirCopies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(3), localfed.WithLeanMembers(), localfed.WithControllers(fedtest.JoinControllers...))
	host := bed.Host
	for i := range 2 {
		startControllerManager(t, bed, steadyProbes, "--share-clusters", "--replica-name", fmt.Sprintf("replica-%d", i),
			"--replica-lease-duration", "6s", "--replica-renew-deadline", "4s", "--replica-retry-period", "1s")
	}
	var names []string
	for _, m := range bed.Fed.Members {
		bed.Join(t, m)
		names = append(names, m.Name)
	}
	enableDeploymentsIn(t, host)
	servedBy := waitForServers(t, bed, names, []string{"replica-0", "replica-1"}, 2)
	t.Logf("served by %v", servedBy)
	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "api", 1, placedOn(names...)))
	waitForCPV(t, host, ns, "deployment-api", "1", "1", names...)
	for _, leaving := range names[1:] {
		m := bed.Fed.Member(leaving)
		if r := runFedwarden(t, unjoinArgs(bed.Fed, m, leaving)...); r.code != 0 {
			t.Fatalf("unjoin %s: %s", leaving, r)
		}
	}
	patchFederated(t, host, ns, "api", setImage(t, "nginx:1.28"))
	waitForImage(t, bed.Members[names[0]], ns, "api", "nginx:1.28")
	waitForCPV(t, host, ns, "deployment-api", "2", "1", names[0])
	// The copies of the clusters that left stay as they were: nobody
	// writes or deletes them. A few seconds leave room for a write that
	// should not come.
	time.Sleep(5 * time.Second)
	for _, left := range names[1:] {
		d := &appsv1.Deployment{}
		if err := bed.Members[left].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "api"}, d); err != nil {
			t.Errorf("the copy in %s, which left the federation: %v; want it kept", left, err)
			continue
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
			t.Errorf("the copy in %s, which left the federation, runs %s; want it as it was, nginx:1.27", left, img)
		}
	}
}
