//go:build unix

package e2e

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// leaderElectionID is the name of the controller-manager's leader-election
// Lease, and the name label of its leader_election_master_status series.
const leaderElectionID = "fedwarden-controller-manager"

// leaderStatusSeries is the series that says 1 on the leader and 0 on a replica
// waiting for the Lease.
var leaderStatusSeries = fmt.Sprintf("leader_election_master_status{name=%q}", leaderElectionID)

// kill ends the controller-manager with SIGKILL, as in a crash: it does
// not release its Lease.
func (cm *controllerManager) kill() error {
	if err := syscall.Kill(cm.PID(), syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing the controller-manager (pid %d): %w", cm.PID(), err)
	}
	return nil
}

// leaderStatus returns what the controller-manager's leader_election_master_status
// says (1: it holds the Lease; 0: it waits for it), or a description of why
// it says nothing.
func (cm *controllerManager) leaderStatus(ctx context.Context) (float64, string) {
	v, ok, err := cm.Metric(ctx, leaderStatusSeries)
	switch {
	case err != nil:
		return -1, err.Error()
	case !ok:
		return -1, leaderStatusSeries + " not exported"
	}
	return v, fmt.Sprintf("%s %v", leaderStatusSeries, v)
}

// leaseHolder returns the holderIdentity of the controller-manager's Lease.
func leaseHolder(ctx context.Context, host client.Client) (string, error) {
	lease := &coordinationv1.Lease{}
	key := types.NamespacedName{Namespace: corev1beta1.DefaultFederationNamespace, Name: leaderElectionID}
	if err := host.Get(ctx, key, lease); err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// Two controller-manager replicas on one host: one leads and propagates,
// the other does nothing. When the leader crashes (SIGKILL: the Lease is
// not released), the other takes the Lease once it expires and propagates
// what changed meanwhile. This test kills a controller-manager, so it has a
// test bed of its own.
func TestLeaderElectionTakeover(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startBed(t, localfed.WithMembers(1), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	f := bed.Fed
	host := newClient(t, f.Host.Config)
	member := f.Members[0]
	memberClient := newClient(t, member.Config)

	var replicas [2]*controllerManager
	for i := range replicas {
		replicas[i] = startControllerManager(t, bed, steadyProbes)
	}
	if r := runFedwarden(t, joinArgs(f, member, member.Name)...); r.code != 0 {
		t.Fatalf("joining %s failed:\n%s", member.Name, r)
	}
	enableDeploymentsIn(t, host)

	// Exactly one replica leads; the other waits for the Lease.
	var leader, survivor *controllerManager
	poll.Eventually(t, 30*time.Second, "exactly one controller-manager to be leader", func(ctx context.Context) (bool, string) {
		first, firstSays := replicas[0].leaderStatus(ctx)
		second, secondSays := replicas[1].leaderStatus(ctx)
		state := fmt.Sprintf("first: %s; second: %s", firstSays, secondSays)
		switch {
		case first == 1 && second == 0:
			leader, survivor = replicas[0], replicas[1]
		case first == 0 && second == 1:
			leader, survivor = replicas[1], replicas[0]
		default:
			return false, state
		}
		return true, state
	})
	holder, err := leaseHolder(t.Context(), host)
	if err != nil || holder == "" {
		t.Fatalf("the Lease %s/%s has no holder while a controller-manager leads: %q, %v", corev1beta1.DefaultFederationNamespace, leaderElectionID, holder, err)
	}

	ns := testNamespace(t, host)
	createObject(t, host, newFederatedDeployment(t, ns, "web-1", 0, placedOn(member.Name)))
	waitForCPV(t, host, ns, "deployment-web-1", "1", "1", member.Name)
	// The replica that is not leader reconciled nothing, with the Lease
	// held and a resource propagated.
	if n, ok := survivor.series(t, "controller_runtime_reconcile_total"); ok && n != 0 {
		t.Fatalf("the controller-manager that is not leader made %v reconciles, want none", n)
	}
	// The reconcile that wrote the CPV is counted once it returns, a moment
	// after the write.
	poll.Eventually(t, 30*time.Second, "the leader to count its reconciles of "+propagationController, func(context.Context) (bool, string) {
		n, _ := leader.series(t, "controller_runtime_reconcile_total", fmt.Sprintf("controller=%q", propagationController))
		return n > 0, fmt.Sprint(n)
	})

	// Crash the leader; change things while nobody leads.
	if err := leader.kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	createObject(t, host, newFederatedDeployment(t, ns, "web-2", 0, placedOn(member.Name)))
	patchFederated(t, host, ns, "web-1", setImage(t, "nginx:1.28"))

	var tookLease, web2Arrived, web1Updated time.Duration
	since := func(d *time.Duration) {
		if *d == 0 {
			*d = time.Since(killed)
		}
	}
	poll.Eventually(t, 60*time.Second, "the surviving controller-manager to lead and propagate web-2 and web-1's new image", func(ctx context.Context) (bool, string) {
		status, says := survivor.leaderStatus(ctx)
		leads := status == 1
		if leads {
			since(&tookLease)
		}
		web2 := &appsv1.Deployment{}
		err2 := memberClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-2"}, web2)
		if err2 == nil {
			since(&web2Arrived)
		}
		web1 := &appsv1.Deployment{}
		image := "?"
		if err := memberClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web-1"}, web1); err == nil {
			image = web1.Spec.Template.Spec.Containers[0].Image
		}
		if image == "nginx:1.28" {
			since(&web1Updated)
		}
		return leads && err2 == nil && image == "nginx:1.28",
			fmt.Sprintf("survivor: %s; web-2 in %s: %v; web-1's image in %s: %s", says, member.Name, err2, member.Name, image)
	})
	waitForCPV(t, host, ns, "deployment-web-1", "2", "1", member.Name)
	waitForCPV(t, host, ns, "deployment-web-2", "1", "1", member.Name)
	t.Logf("after the leader was killed: the survivor led after %v, web-2 reached %s after %v, web-1's new image after %v",
		tookLease.Round(10*time.Millisecond), member.Name, web2Arrived.Round(10*time.Millisecond), web1Updated.Round(10*time.Millisecond))

	if now, err := leaseHolder(t.Context(), host); err != nil || now == "" || now == holder {
		t.Errorf("the Lease's holder after the takeover is %q (error %v); want a holder other than the killed leader %q", now, err, holder)
	}
	// A reconcile is counted when it returns, after its deferred status
	// write: under load, the copies and CPVs can be current before then.
	poll.Eventually(t, 30*time.Second, "the survivor to count its reconciles of "+propagationController+", as it leads and web-2 is in sync", func(context.Context) (bool, string) {
		n, _ := survivor.series(t, "controller_runtime_reconcile_total", fmt.Sprintf("controller=%q", propagationController))
		return n > 0, fmt.Sprint(n)
	})
}
