package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// A member that dies goes Offline after the failure threshold while the
// others stay Ready, and comes back Ready when it restarts. Unjoin while it
// is down removes the host side and says what it left; run again once the
// member is back, it finishes the job. This test stops clusters, so it has a
// test bed of its own.
func TestMemberOfflineAndBack(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	// This test needs quick Offline detection, and chooses the settings.
	probes := quickProbes
	bed, manager := startJoinedBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(2), localfed.WithControllers(fedtest.JoinControllers...)}}, probes)
	host := bed.Host
	down, up := bed.Fed.Members[0], bed.Fed.Members[1]

	failedBefore := manager.failedProbes(t, down.Name)
	killing := time.Now()
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, host, down.Name, corev1beta1.ClusterOffline, metav1.ConditionTrue, corev1beta1.ReasonClusterUnreachable, probes.failedWithin())
	took := time.Since(killing)
	// The threshold holds: it took failureThreshold failed probes in a
	// row. Counted when Offline is first seen, they are at least that many
	// (one more probe may have come since, never one fewer). The one
	// exception is the member's breaker: requests that got no answer for
	// the stall timeout and a probe that got none either are Offline at
	// once (docs/operations.md), and the trip is counted.
	failed, trips := manager.failedProbes(t, down.Name), manager.breakerTrips(t, down.Name)
	if failed < float64(probes.failureThreshold) && (failed < 1 || trips < 1) {
		t.Errorf("%s went Offline after %v failed probes and %v breaker trips, want at least %d failed probes, or one with a trip", down.Name, failed, trips, probes.failureThreshold)
	}
	// And in time: probes of a cluster start at least a period apart, one
	// after another. The first failed one may have been in flight when the
	// member was killed, the second started after: Offline comes at least
	// failureThreshold-2 periods after the kill (a load only makes that
	// longer). Unless a probe had failed before the kill: then the streak
	// may have begun earlier, and only the count above proves the threshold.
	if least := time.Duration(probes.failureThreshold-2)*probes.period - probes.period/2; failedBefore == 0 && trips == 0 && took < least {
		t.Errorf("%s went Offline %s after it was killed, sooner than %d failed probes %s apart allow (%s)", down.Name, took, probes.failureThreshold, probes.period, least)
	}
	if got, err := clusterCondition(t.Context(), host, up.Name, corev1beta1.ClusterReady); err != nil || got.status != metav1.ConditionTrue {
		t.Errorf("%s: Ready = %+v (%v) while %s is down", up.Name, got, err, down.Name)
	}

	if err := fedtest.RestartCluster(t, down); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, host, down.Name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, probes.probesWithin(1))

	// Unjoin with the member down: the host side goes, the member side stays.
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	r := runFedwarden(t, unjoinArgs(bed.Fed, down, down.Name, "--timeout", "5s")...)
	if r.code != 3 {
		t.Fatalf("unjoin with the member down: want exit code 3, got:\n%s", r)
	}
	for _, what := range []string{"ServiceAccount", "fedwarden-" + down.Name} {
		if !strings.Contains(r.stderr, what) {
			t.Errorf("unjoin does not say it left %q:\n%s", what, r.stderr)
		}
	}
	for key, rv := range resourceVersions(t, host, hostObjects(down.Name)) {
		if rv != "absent" {
			t.Errorf("unjoin with the member down left %s on the host", key)
		}
	}
	if err := fedtest.RestartCluster(t, down); err != nil {
		t.Fatal(err)
	}
	if r := runFedwarden(t, unjoinArgs(bed.Fed, down, down.Name)...); r.code != 0 {
		t.Fatalf("unjoin with the member back failed:\n%s", r)
	}
	member := newClient(t, down.Config)
	poll.Eventually(t, 30*time.Second, "the member side to be removed", func(context.Context) (bool, string) {
		for key, rv := range resourceVersions(t, member, memberObjects(down.Name)) {
			if rv != "absent" {
				return false, key + " is still there"
			}
		}
		return true, ""
	})
}

// breakerTrips is how many times cluster's breaker found it not
// answering since the controller-manager started.
func (cm *controllerManager) breakerTrips(t *testing.T, cluster string) float64 {
	t.Helper()
	trips, _ := cm.series(t, "fedwarden_cluster_breaker_trips_total", fmt.Sprintf("cluster=%q", cluster))
	return trips
}

// failedProbes is how many probes of cluster failed, whatever the outcome,
// since the controller-manager started.
func (cm *controllerManager) failedProbes(t *testing.T, cluster string) float64 {
	t.Helper()
	const series = "fedwarden_cluster_probe_duration_seconds_count"
	all, _ := cm.series(t, series, fmt.Sprintf("cluster=%q", cluster))
	ready, _ := cm.series(t, series, fmt.Sprintf("cluster=%q", cluster), `outcome="ready"`)
	return all - ready
}
