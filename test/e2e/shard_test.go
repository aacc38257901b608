//go:build unix

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
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
// cluster. The replica comes back and gets clusters again, writing nothing
// to their copies. Then the leader is killed: another leads, and a change
// reaches every cluster. This test kills controller-managers, so it has a
// bed of its own.
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
	// A hand edit in every member, healed by whoever serves it, leaves an
	// episode in each cluster's entry: the drift ledger must survive every
	// handover below.
	for _, name := range names {
		d := &appsv1.Deployment{}
		if err := bed.Members[name].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = new(int32(3))
		if err := bed.Members[name].Update(t.Context(), d); err != nil {
			t.Fatalf("editing the copy in %s: %v", name, err)
		}
	}
	poll.Eventually(t, 60*time.Second, "each cluster's hand edit to be healed and in its entry's ledger", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "deployment-web")
		if err != nil {
			return false, err.Error()
		}
		return len(ledgers(cpv)) == len(names), fmt.Sprintf("clusters with a healed episode: %v", ledgers(cpv))
	})
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
	imageEverywhere(t, bed, ns, "web", "nginx:1.28", names)
	waitForCPV(t, host, ns, "deployment-web", "2", "1", names...)

	// The killed replica comes back: clusters move to it, with no gap in
	// which a cluster is not served, and no write to the copies.
	before = copyVersions(t, bed, ns, "web", names)
	replicas[victim] = startControllerManager(t, bed, steadyProbes, args(victim)...)
	rejoined := waitForServers(t, bed, names, slices.Collect(maps.Keys(replicas)), 3)
	t.Logf("after %s came back: served by %v", victim, rejoined)
	waitForCPV(t, host, ns, "deployment-web", "2", "1", names...)
	time.Sleep(2 * replicaLease)
	if now := copyVersions(t, bed, ns, "web", names); !maps.Equal(now, before) {
		t.Errorf("copies written when %s came back: UID/resourceVersion %v, want them as before %v", victim, now, before)
	}

	// The leader is killed: another replica leads (after the leader
	// election's Lease), stops the syncs it ran as a replica, and places.
	var leader string
	for name, cm := range replicas {
		if status, _ := cm.leaderStatus(t.Context()); status == 1 {
			leader = name
		}
	}
	if leader == "" {
		t.Fatal("no replica leads")
	}
	if err := replicas[leader].kill(); err != nil {
		t.Fatal(err)
	}
	delete(replicas, leader)
	poll.Eventually(t, 90*time.Second, "another replica to lead", func(ctx context.Context) (bool, string) {
		var says []string
		for name, cm := range replicas {
			status, said := cm.leaderStatus(ctx)
			if status == 1 {
				return true, name + " leads"
			}
			says = append(says, name+": "+said)
		}
		return false, strings.Join(says, "; ")
	})
	waitForServers(t, bed, names, slices.Collect(maps.Keys(replicas)), 2)
	patchFederated(t, host, ns, "web", setImage(t, "nginx:1.29"))
	imageEverywhere(t, bed, ns, "web", "nginx:1.29", names)
	cpv := waitForCPV(t, host, ns, "deployment-web", "3", "1", names...)
	if got := ledgers(cpv); len(got) != len(names) {
		t.Errorf("after the handovers, the clusters whose entry keeps its drift episode are %v, want all of %v", got, names)
	}
}

// ledgers returns the clusters whose CPV entry is InSync and records at
// least one drift episode.
func ledgers(cpv *typesv1beta1.ClusterPropagatedVersion) []string {
	var out []string
	for _, cv := range cpv.Status.ClusterVersions {
		if cv.State == typesv1beta1.InSync && len(cv.DriftHistory) > 0 {
			out = append(out, string(cv.ClusterName))
		}
	}
	slices.Sort(out)
	return out
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

// imageEverywhere waits until the Deployment name runs image in every
// member of names.
func imageEverywhere(t *testing.T, bed *fedtest.Bed, namespace, name, image string, names []string) {
	t.Helper()
	for _, member := range names {
		waitForImage(t, bed.Members[member], namespace, name, image)
	}
}
