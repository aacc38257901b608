//go:build unix

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// replicaLease is the replicas' Lease timing in TestReplicasShareTheMembers:
// a killed replica's clusters are taken over this long after its last
// renewal.
const replicaLease = 6 * time.Second

// Three controller-manager replicas with --share-clusters share six Push
// members: each cluster names the replica that serves it, and at least two
// serve. A resource placed on all six reaches them all. A replica that is
// not the leader is killed with SIGKILL: its clusters are taken over by
// the others after its Lease lapses, the takeover writes nothing to copies
// that are already right, and a change made afterwards reaches every
// cluster. This test kills a controller-manager, so it has a bed of its
// own.
func TestReplicasShareTheMembers(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(6), localfed.WithLeanMembers(), localfed.WithControllers(fedtest.JoinControllers...))
	host := bed.Host
	args := func(name string) []string {
		return []string{"--share-clusters", "--replica-name", name,
			"--replica-lease-duration", replicaLease.String(), "--replica-renew-deadline", "4s", "--replica-retry-period", "1s"}
	}
	replicas := map[string]*controllerManager{}
	for i := range 3 {
		name := fmt.Sprintf("replica-%d", i)
		replicas[name] = startControllerManager(t, bed, steadyProbes, args(name)...)
	}
	var names []string
	for _, m := range bed.Fed.Members {
		bed.Join(t, m)
		names = append(names, m.Name)
	}
	enableDeploymentsIn(t, host)

	servedBy := waitForServers(t, bed, names, slices.Collect(maps.Keys(replicas)), 2)
	t.Logf("clusters served by: %v", servedBy)

	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "web", 1, placedOn(names...)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", names...)
	before := copyVersions(t, bed, ns, "web", names)

	// Kill a replica that serves clusters and does not lead.
	var victim string
	for name, cm := range replicas {
		if status, _ := cm.leaderStatus(t.Context()); status == 0 && slices.Contains(slices.Collect(maps.Values(servedBy)), name) {
			victim = name
			break
		}
	}
	if victim == "" {
		t.Fatalf("no replica both serves a cluster and does not lead; clusters served by %v", servedBy)
	}
	var moved []string
	for cluster, server := range servedBy {
		if server == victim {
			moved = append(moved, cluster)
		}
	}
	slices.Sort(moved)
	if err := replicas[victim].kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	delete(replicas, victim)
	live := slices.Collect(maps.Keys(replicas))
	after := waitForServers(t, bed, names, live, 1)
	took := time.Since(killed)
	t.Logf("after %s was killed, its clusters %v were taken over in %s (Lease %s): served by %v", victim, moved, took.Round(10*time.Millisecond), replicaLease, after)

	// The replicas that took over sync the moved clusters again, at once
	// (the served clusters' runs start) and find their copies right: they
	// write nothing to them. A few Lease durations leave room for any
	// write they would make.
	waitForCPV(t, host, ns, "deployment-web", "1", "1", names...)
	time.Sleep(2 * replicaLease)
	if now := copyVersions(t, bed, ns, "web", names); !maps.Equal(now, before) {
		t.Errorf("copies written by the takeover: UID/resourceVersion %v, want them as before the kill %v", now, before)
	}

	// A change made afterwards reaches every cluster.
	patchFederated(t, host, ns, "web", setImage(t, "nginx:1.28"))
	poll.Eventually(t, 90*time.Second, "nginx:1.28 to reach every member", func(ctx context.Context) (bool, string) {
		var lagging []string
		for _, name := range names {
			d := &appsv1.Deployment{}
			if err := bed.Members[name].Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
				lagging = append(lagging, name)
			}
		}
		return len(lagging) == 0, fmt.Sprintf("not yet at nginx:1.28: %v", lagging)
	})
	waitForCPV(t, host, ns, "deployment-web", "2", "1", names...)
}

// waitForServers waits until every cluster of names is Ready and names in
// status.servedBy a replica of live, with at least least distinct
// replicas serving, and returns who serves each.
func waitForServers(t *testing.T, bed *fedtest.Bed, names, live []string, least int) map[string]string {
	t.Helper()
	servedBy := map[string]string{}
	poll.Eventually(t, 2*time.Minute, fmt.Sprintf("each cluster to be Ready and served by one of %v, by at least %d of them", live, least), func(ctx context.Context) (bool, string) {
		clear(servedBy)
		servers := map[string]bool{}
		var notYet []string
		for _, name := range names {
			fc := &corev1beta1.FederatedCluster{}
			if err := bed.Host.Get(ctx, types.NamespacedName{Name: name}, fc); err != nil {
				return false, err.Error()
			}
			servedBy[name] = fc.Status.ServedBy
			if !slices.Contains(live, fc.Status.ServedBy) || !clusterReady(fc) {
				notYet = append(notYet, fmt.Sprintf("%s (served by %q, Ready %v)", name, fc.Status.ServedBy, clusterReady(fc)))
				continue
			}
			servers[fc.Status.ServedBy] = true
		}
		return len(notYet) == 0 && len(servers) >= least, fmt.Sprintf("not yet: %v; served by %v", notYet, servedBy)
	})
	return maps.Clone(servedBy)
}

// clusterReady tells whether fc's Ready condition is True.
func clusterReady(fc *corev1beta1.FederatedCluster) bool {
	for _, c := range fc.Status.Conditions {
		if c.Type == corev1beta1.ClusterReady {
			return c.Status == "True"
		}
	}
	return false
}

// copyVersions returns the resourceVersion of the Deployment name in each
// member of names, with its UID.
func copyVersions(t *testing.T, bed *fedtest.Bed, namespace, name string, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, member := range names {
		d := &appsv1.Deployment{}
		if err := bed.Members[member].Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			t.Fatalf("reading the copy in %s: %v", member, err)
		}
		out[member] = string(d.UID) + "/" + d.ResourceVersion
	}
	return out
}
