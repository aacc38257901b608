package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

// A member that dies goes Offline after the failure threshold while the
// others stay Ready, and comes back Ready when it restarts. Unjoin while it
// is down removes the host side and says what it left; run again once the
// member is back, it finishes the job. This test stops clusters, so it has a
// test bed of its own.
func TestMemberOfflineAndBack(t *testing.T) {
	t.Parallel()
	bed, err := localfed.Start(t.Context(), localfed.WithMembers(2), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	if err != nil {
		t.Fatalf("starting a test bed: %v", err)
	}
	t.Cleanup(func() {
		if err := bed.Stop(); err != nil {
			t.Errorf("stopping the test bed: %v", err)
		}
	})
	manager, err := startControllerManager(bed, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := manager.stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			dumpLog(manager.logPath)
		}
	})
	for _, m := range bed.Members {
		if r := runFedwarden(t, joinArgs(bed, m, m.Name)...); r.code != 0 {
			t.Fatalf("joining %s failed:\n%s", m.Name, r)
		}
	}
	host := newClient(t, bed.Host.Config)
	down, up := bed.Members[0], bed.Members[1]

	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitForCondition(t, host, down.Name, corev1beta1.ClusterOffline, metav1.ConditionTrue, corev1beta1.ReasonClusterUnreachable, time.Duration(failureThreshold+3)*probePeriod+10*time.Second)
	// The threshold holds: it takes failureThreshold failed probes, one per
	// period, and the first may come right after the kill (half a period of
	// slack for scheduling).
	if took := time.Since(killed); took < time.Duration(failureThreshold-1)*probePeriod-probePeriod/2 {
		t.Errorf("%s went Offline %s after it was killed, sooner than %d failed probes allow", down.Name, took, failureThreshold)
	}
	if got, err := clusterCondition(t.Context(), host, up.Name, corev1beta1.ClusterReady); err != nil || got.status != metav1.ConditionTrue {
		t.Errorf("%s: Ready = %+v (%v) while %s is down", up.Name, got, err, down.Name)
	}

	if err := down.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, host, down.Name, corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, 3*probePeriod+10*time.Second)

	// Unjoin with the member down: the host side goes, the member side stays.
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	r := runFedwarden(t, unjoinArgs(bed, down, down.Name, "--timeout", "5s")...)
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
	if err := down.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if r := runFedwarden(t, unjoinArgs(bed, down, down.Name)...); r.code != 0 {
		t.Fatalf("unjoin with the member back failed:\n%s", r)
	}
	member := newClient(t, down.Config)
	eventually(t, 30*time.Second, "the member side to be removed", func(context.Context) (bool, string) {
		for key, rv := range resourceVersions(t, member, memberObjects(down.Name)) {
			if rv != "absent" {
				return false, key + " is still there"
			}
		}
		return true, ""
	})
}
