package clusterhealth

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
	th = Thresholds{Failure: 3, Success: 1}
)

func readyProbe() probeResult {
	return probeResult{outcome: probeReady, message: "https://m:6443/readyz answered ok", version: "v1.37.2"}
}

func unreachableProbe() probeResult {
	return probeResult{outcome: probeUnreachable, message: "https://m:6443: connection refused"}
}

// aliveLease was seen renewed 2 s before t1 and lasts 40 s; expiredLease
// was seen renewed a minute before t1. The agent's clock is an hour ahead
// of the host's in both: only when the host saw a renewal counts.
func aliveLease() agentLease {
	seen := t1.Add(-2 * time.Second)
	return agentLease{found: true, holder: "agent-0", renewed: seen.Add(time.Hour), seen: seen, duration: 40 * time.Second, version: "v1.37.2"}
}

func expiredLease() agentLease {
	l := aliveLease()
	l.seen = t1.Add(-time.Minute)
	l.renewed = l.seen.Add(time.Hour)
	return l
}

// statusAfter runs observations in order from an empty status.
func statusAfter(obs ...observation) corev1beta1.FederatedClusterStatus {
	var st corev1beta1.FederatedClusterStatus
	for _, o := range obs {
		st = nextStatus(st, o, th, 1, t0)
	}
	return st
}

func TestNextStatus(t *testing.T) {
	type want struct {
		ready, offline, malformed metav1.ConditionStatus
		readyReason               string
		version                   string
	}
	malformed := &clustercache.MalformedError{Reason: corev1beta1.ReasonSecretNotFound, Message: "Secret x does not exist"}
	tests := []struct {
		name string
		from corev1beta1.FederatedClusterStatus
		obs  observation
		want want
	}{
		{
			name: "first probe ready is taken at once",
			obs:  observation{probe: readyProbe(), streak: 1},
			want: want{ready: "True", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonClusterReady, version: "v1.37.2"},
		},
		{
			name: "first probe unreachable is taken at once, below the threshold",
			obs:  observation{probe: unreachableProbe(), streak: 1},
			want: want{ready: "False", offline: "True", malformed: "False", readyReason: corev1beta1.ReasonClusterUnreachable},
		},
		{
			name: "a ready cluster stays Ready below the failure threshold",
			from: statusAfter(observation{probe: readyProbe(), streak: 1}),
			obs:  observation{probe: unreachableProbe(), streak: 2},
			want: want{ready: "True", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonClusterReady, version: "v1.37.2"},
		},
		{
			name: "a ready cluster goes Offline at the failure threshold, keeping its last version",
			from: statusAfter(observation{probe: readyProbe(), streak: 1}),
			obs:  observation{probe: unreachableProbe(), streak: 3},
			want: want{ready: "False", offline: "True", malformed: "False", readyReason: corev1beta1.ReasonClusterUnreachable, version: "v1.37.2"},
		},
		{
			name: "rejected credentials: reachable, not Ready",
			from: statusAfter(observation{probe: readyProbe(), streak: 1}),
			obs:  observation{probe: probeResult{outcome: probeRejected, message: "401"}, streak: 3},
			want: want{ready: "False", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonCredentialsRejected, version: "v1.37.2"},
		},
		{
			name: "untrusted certificate: reachable, not Ready",
			obs:  observation{probe: probeResult{outcome: probeUntrusted, message: "x509"}, streak: 1},
			want: want{ready: "False", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonCertificateUntrusted},
		},
		{
			name: "not ready: reachable, not Ready",
			obs:  observation{probe: probeResult{outcome: probeNotReady, message: "500"}, streak: 1},
			want: want{ready: "False", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonClusterNotReady},
		},
		{
			name: "offline cluster comes back at the success threshold",
			from: statusAfter(observation{probe: unreachableProbe(), streak: 1}),
			obs:  observation{probe: readyProbe(), streak: 1},
			want: want{ready: "True", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonClusterReady, version: "v1.37.2"},
		},
		{
			name: "malformed settings: not probed",
			from: statusAfter(observation{probe: readyProbe(), streak: 1}),
			obs:  observation{malformed: malformed},
			want: want{ready: "False", offline: "Unknown", malformed: "True", readyReason: corev1beta1.ReasonSecretNotFound, version: "v1.37.2"},
		},
		{
			name: "credentials redirected: not Ready at once, whatever the streak",
			from: statusAfter(observation{probe: readyProbe(), streak: 1}),
			obs:  observation{malformed: &clustercache.MalformedError{Reason: corev1beta1.ReasonCredentialsNotBound, Message: "Secret x holds the credentials of cluster y"}},
			want: want{ready: "False", offline: "Unknown", malformed: "True", readyReason: corev1beta1.ReasonCredentialsNotBound, version: "v1.37.2"},
		},
		{
			name: "fixed settings: the first probe after is taken at once",
			from: statusAfter(observation{malformed: malformed}),
			obs:  observation{probe: unreachableProbe(), streak: 1},
			want: want{ready: "False", offline: "True", malformed: "False", readyReason: corev1beta1.ReasonClusterUnreachable},
		},
		{
			name: "pull cluster waits for its agent",
			obs:  observation{pull: true},
			want: want{ready: "Unknown", offline: "Unknown", malformed: "False", readyReason: corev1beta1.ReasonAgentNotSeen},
		},
		{
			name: "pull cluster whose agent renews its Lease is Ready, with the member's version",
			obs:  observation{pull: true, lease: aliveLease()},
			want: want{ready: "True", offline: "False", malformed: "False", readyReason: corev1beta1.ReasonAgentRenewing, version: "v1.37.2"},
		},
		{
			name: "pull cluster whose agent's Lease expired is not Ready and Offline",
			from: statusAfter(observation{pull: true, lease: aliveLease()}),
			obs:  observation{pull: true, lease: expiredLease()},
			want: want{ready: "False", offline: "True", malformed: "False", readyReason: corev1beta1.ReasonAgentLeaseExpired, version: "v1.37.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := nextStatus(tt.from, tt.obs, th, 1, t1)
			got := want{
				ready:     conditionStatus(st, corev1beta1.ClusterReady),
				offline:   conditionStatus(st, corev1beta1.ClusterOffline),
				malformed: conditionStatus(st, corev1beta1.ClusterConfigMalformed),
				version:   st.KubernetesVersion,
			}
			if c := meta.FindStatusCondition(st.Conditions, corev1beta1.ClusterReady); c != nil {
				got.readyReason = c.Reason
			}
			if got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func conditionStatus(st corev1beta1.FederatedClusterStatus, typ string) metav1.ConditionStatus {
	if c := meta.FindStatusCondition(st.Conditions, typ); c != nil {
		return c.Status
	}
	return "absent"
}

// A steady cluster must yield an identical status, so that nothing is written.
func TestNextStatusIsStableWhenNothingChanges(t *testing.T) {
	for _, obs := range []observation{
		{probe: readyProbe(), streak: 5},
		{probe: unreachableProbe(), streak: 5},
		{malformed: &clustercache.MalformedError{Reason: corev1beta1.ReasonSecretMalformed, Message: "no token"}},
		{pull: true},
		{pull: true, lease: aliveLease()},
	} {
		first := nextStatus(corev1beta1.FederatedClusterStatus{}, obs, th, 1, t0)
		again := nextStatus(first, obs, th, 1, t1)
		if !equality.Semantic.DeepEqual(first, again) {
			t.Errorf("status changed on a repeated observation %+v:\n%+v\n%+v", obs, first, again)
		}
	}
}

func TestTransitionTimeMovesOnlyWithStatus(t *testing.T) {
	st := nextStatus(corev1beta1.FederatedClusterStatus{}, observation{probe: unreachableProbe(), streak: 1}, th, 1, t0)
	st = nextStatus(st, observation{probe: probeResult{outcome: probeRejected, message: "401"}, streak: 4}, th, 1, t1)
	ready := meta.FindStatusCondition(st.Conditions, corev1beta1.ClusterReady)
	if !ready.LastTransitionTime.Equal(&t0) {
		t.Errorf("Ready stayed False but its transition time moved to %v", ready.LastTransitionTime)
	}
	offline := meta.FindStatusCondition(st.Conditions, corev1beta1.ClusterOffline)
	if !offline.LastTransitionTime.Equal(&t1) {
		t.Errorf("Offline went True→False but its transition time is %v", offline.LastTransitionTime)
	}
}

// status.servedBy names the replica that probed a Push cluster, and the
// agent holding a Pull cluster's Lease; a Pull cluster whose agent was
// never seen keeps what it had.
func TestServedBy(t *testing.T) {
	st := statusAfter(observation{probe: readyProbe(), streak: 1, servedBy: "controller-manager-0"})
	if st.ServedBy != "controller-manager-0" {
		t.Errorf("Push cluster served by %q, want the replica that probed it", st.ServedBy)
	}
	st = nextStatus(st, observation{probe: readyProbe(), streak: 2, servedBy: "controller-manager-1"}, th, 1, t1)
	if st.ServedBy != "controller-manager-1" {
		t.Errorf("Push cluster taken over: served by %q, want controller-manager-1", st.ServedBy)
	}
	pull := statusAfter(observation{pull: true, lease: aliveLease()})
	if pull.ServedBy != "agent-0" {
		t.Errorf("Pull cluster served by %q, want its agent agent-0", pull.ServedBy)
	}
	if again := nextStatus(pull, observation{pull: true}, th, 1, t1); again.ServedBy != "agent-0" {
		t.Errorf("Pull cluster whose Lease is gone: served by %q, want agent-0 kept", again.ServedBy)
	}
}

// A probe without an answer while the member's breaker is open is taken
// at once: the cluster is Offline without the failure threshold.
func TestADecisiveProbeSkipsTheThreshold(t *testing.T) {
	st := statusAfter(observation{probe: readyProbe(), streak: 1})
	hung := unreachableProbe()
	st = nextStatus(st, observation{probe: hung, streak: 1}, th, 1, t1)
	if meta.IsStatusConditionTrue(st.Conditions, corev1beta1.ClusterOffline) {
		t.Fatal("one failed probe made a Ready cluster Offline, before the threshold")
	}
	hung.decisive = true
	st = nextStatus(st, observation{probe: hung, streak: 1}, th, 1, t1)
	if !meta.IsStatusConditionTrue(st.Conditions, corev1beta1.ClusterOffline) || meta.IsStatusConditionTrue(st.Conditions, corev1beta1.ClusterReady) {
		t.Fatalf("a decisive failed probe left the cluster %+v, want Offline and not Ready", st.Conditions)
	}
}
