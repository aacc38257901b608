package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// skewLeaseSeconds is the Lease duration the skewed agents write: the
// smallest the isolation policy allows.
const skewLeaseSeconds = 10

// TestAnAgentsClockSkewDoesNotDecideReadiness: the host times an agent's
// Lease renewals by its own clock. An agent whose clock is an hour ahead
// turns not Ready one Lease duration after it stops renewing, not an hour
// later; one whose clock is an hour behind stays Ready while it renews.
// The agents are played by the test, writing their Leases as an agent
// would, with skewed renewTimes. The Pull clusters are never contacted.
func TestAnAgentsClockSkewDoesNotDecideReadiness(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startNamespaceBed(t, 0)
	c := bed.host
	if err := c.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1beta1.DefaultFederationNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the control-plane namespace: %v", err)
	}
	for _, name := range []string{"ahead-1", "behind-1"} {
		createObject(t, c, &corev1beta1.FederatedCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			// loopback-check: not dialed (a Pull cluster is not contacted)
			Spec: corev1beta1.FederatedClusterSpec{APIEndpoint: "https://127.0.0.1:1", SyncMode: corev1beta1.SyncModePull},
		})
	}
	timeout := 90 * time.Second

	// An agent an hour ahead renews once, then stops.
	renewSkewed(t, c, "ahead-1", time.Hour)
	waitForCondition(t, c, "ahead-1", corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonAgentRenewing, timeout)
	stopped := time.Now()
	got := waitForCondition(t, c, "ahead-1", corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonAgentLeaseExpired, timeout)
	t.Logf("ahead-1 not Ready %s after its agent stopped (Lease %d s, renewTime an hour ahead): %s", time.Since(stopped).Round(time.Second), skewLeaseSeconds, got.message)

	// An agent an hour behind renews every 2 s: its first renewal is an
	// hour old when first seen, so it may start not Ready, then it is Ready
	// and stays Ready for three Lease durations while it renews.
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			renewSkewed(t, c, "behind-1", -time.Hour)
			select {
			case <-ctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()
	t.Cleanup(func() { stop(); <-done })
	waitForCondition(t, c, "behind-1", corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonAgentRenewing, timeout)
	holdFor := 3 * skewLeaseSeconds * time.Second
	for end := time.Now().Add(holdFor); time.Now().Before(end); time.Sleep(time.Second) {
		cond, err := clusterCondition(t.Context(), c, "behind-1", corev1beta1.ClusterReady)
		if err != nil {
			t.Fatal(err)
		}
		if cond.status != metav1.ConditionTrue {
			t.Fatalf("behind-1 turned not Ready while its agent renews (renewTime an hour behind the host): %+v", cond)
		}
	}
	stop()
	<-done
	waitForCondition(t, c, "behind-1", corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonAgentLeaseExpired, timeout)
}

// renewSkewed writes the agent Lease of cluster as its agent renews it,
// with a renewTime skew away from the test's clock.
func renewSkewed(t *testing.T, c client.Client, cluster string, skew time.Duration) {
	t.Helper()
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: corev1beta1.DefaultFederationNamespace, Name: registration.AgentLeaseName(cluster)}}
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To("agent-" + cluster),
		LeaseDurationSeconds: ptr.To(int32(skewLeaseSeconds)),
		RenewTime:            &metav1.MicroTime{Time: time.Now().Add(skew)},
	}
	err := c.Get(t.Context(), client.ObjectKeyFromObject(lease), lease)
	switch {
	case apierrors.IsNotFound(err):
		lease.Spec = spec
		err = c.Create(t.Context(), lease)
	case err == nil:
		lease.Spec = spec
		err = c.Update(t.Context(), lease)
	}
	if err != nil && t.Context().Err() == nil {
		t.Errorf("%s", fmt.Errorf("renewing the Lease of %s: %w", cluster, err))
	}
}
