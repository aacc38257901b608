package clusterhealth

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// Thresholds are how many probes in a row must agree before the Ready
// condition flips.
type Thresholds struct {
	// Failure: consecutive failed probes before a Ready cluster is marked
	// not Ready (and Offline, if it did not answer).
	Failure int
	// Success: consecutive successful probes before a not-Ready cluster is
	// marked Ready.
	Success int
}

// observation is what one visit of a cluster saw.
type observation struct {
	// malformed is set when the connection settings cannot be used; the
	// cluster was not probed.
	malformed *clustercache.MalformedError
	// pull is set for a Pull cluster, which the host does not probe; its
	// agent's Lease says whether it is alive.
	pull  bool
	lease agentLease
	// probe is the result of the probe, when there was one.
	probe probeResult
	// streak counts the probes in a row, this one included, that agreed
	// with this one on readiness.
	streak int
	// duplicateOf, set when the cluster answered, is the FederatedCluster
	// joined before that has the same cluster ID (see duplicateOf).
	duplicateOf string
	// servedBy is who serves the cluster: this replica for a Push cluster
	// it probed, the agent holding the Lease of a Pull cluster.
	servedBy string
}

// server is who serves the cluster obs is of, or "" when that is not
// known: a Pull cluster whose agent never held its Lease.
func (obs observation) server() string {
	if obs.pull {
		return obs.lease.holder
	}
	return obs.servedBy
}

// answered reports whether the cluster answered: its probe succeeded, or
// its agent renews its Lease in time.
func (obs observation) answered(now time.Time) bool {
	if obs.pull {
		return obs.lease.found && !now.After(obs.lease.expiresAt())
	}
	return obs.malformed == nil && obs.probe.outcome == probeReady
}

// clusterID is the cluster ID obs read: from the probe, or the agent's Lease.
func (obs observation) clusterID() string {
	if obs.pull {
		return obs.lease.clusterID
	}
	return obs.probe.clusterID
}

// nextStatus returns the status a cluster should have after obs. It
// changes nothing that obs does not contradict, so that an unchanged member
// yields a status equal to old.
func nextStatus(old corev1beta1.FederatedClusterStatus, obs observation, th Thresholds, generation int64, now metav1.Time) corev1beta1.FederatedClusterStatus {
	st := *old.DeepCopy()
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: message,
			ObservedGeneration: generation, LastTransitionTime: now,
		})
	}
	switch {
	case obs.malformed != nil:
		set(corev1beta1.ClusterConfigMalformed, metav1.ConditionTrue, obs.malformed.Reason, obs.malformed.Message)
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, obs.malformed.Reason, obs.malformed.Message)
		set(corev1beta1.ClusterOffline, metav1.ConditionUnknown, corev1beta1.ReasonNotProbed, "the cluster is not probed until its connection settings are fixed")
		return st
	case obs.pull:
		set(corev1beta1.ClusterConfigMalformed, metav1.ConditionFalse, corev1beta1.ReasonConfigValid, "the connection settings are valid")
		applyLease(&st, obs.lease, now.Time, set)
	default:
		set(corev1beta1.ClusterConfigMalformed, metav1.ConditionFalse, corev1beta1.ReasonConfigValid, "the connection settings are valid")
		if !decided(st) || obs.streak >= threshold(obs.probe, th) || obs.probe.decisive {
			applyProbe(&st, obs.probe, set)
		}
	}
	if id := obs.clusterID(); id != "" {
		st.ClusterID = id
	}
	if server := obs.server(); server != "" {
		st.ServedBy = server
	}
	if obs.duplicateOf != "" {
		// At once, without thresholds: one cluster under two names is not
		// a state that flaps, and every write through this one would fight
		// the other's.
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonDuplicateCluster, duplicateMessage(obs.duplicateOf, st.ClusterID))
	}
	return st
}

// duplicateMessage says why a cluster is a duplicate, and what to do.
func duplicateMessage(first, id string) string {
	return fmt.Sprintf("this is the cluster joined before as %s (the same kube-system namespace UID %s): "+
		"two FederatedClusters of one cluster would write the same objects, so nothing is written or deleted through this one; "+
		"unjoin one of them ('fedwarden unjoin')", first, id)
}

// decided reports whether the Ready and Offline conditions come from earlier
// probes; if not, a probe result is taken at once, without thresholds.
func decided(st corev1beta1.FederatedClusterStatus) bool {
	ready := meta.FindStatusCondition(st.Conditions, corev1beta1.ClusterReady)
	offline := meta.FindStatusCondition(st.Conditions, corev1beta1.ClusterOffline)
	return ready != nil && offline != nil && ready.Status != metav1.ConditionUnknown && offline.Status != metav1.ConditionUnknown
}

func threshold(p probeResult, th Thresholds) int {
	if p.outcome == probeReady {
		return th.Success
	}
	return th.Failure
}

// applyProbe sets Ready, Offline and the version from a probe result.
func applyProbe(st *corev1beta1.FederatedClusterStatus, p probeResult, set func(typ string, status metav1.ConditionStatus, reason, message string)) {
	reachable := func() {
		set(corev1beta1.ClusterOffline, metav1.ConditionFalse, corev1beta1.ReasonClusterReachable, "the API server accepts connections")
	}
	switch p.outcome {
	case probeReady:
		set(corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, p.message)
		reachable()
		if p.version != "" {
			st.KubernetesVersion = p.version
		}
	case probeNotReady:
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterNotReady, p.message)
		reachable()
	case probeUntrusted:
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCertificateUntrusted, p.message)
		reachable()
	case probeRejected:
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonCredentialsRejected, p.message)
		reachable()
	case probeUnreachable:
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, p.message)
		set(corev1beta1.ClusterOffline, metav1.ConditionTrue, corev1beta1.ReasonClusterUnreachable, p.message)
	}
}

// applyLease sets Ready, Offline and the version of a Pull cluster from
// its agent's Lease: Ready while the agent renews it in time.
func applyLease(st *corev1beta1.FederatedClusterStatus, l agentLease, now time.Time, set func(typ string, status metav1.ConditionStatus, reason, message string)) {
	switch {
	case !l.found:
		const msg = "a Pull cluster is Ready while its agent renews its Lease on the host; no agent has renewed one"
		set(corev1beta1.ClusterReady, metav1.ConditionUnknown, corev1beta1.ReasonAgentNotSeen, msg)
		set(corev1beta1.ClusterOffline, metav1.ConditionUnknown, corev1beta1.ReasonAgentNotSeen, msg)
	case now.After(l.expiresAt()):
		msg := fmt.Sprintf("the agent %s has not renewed its Lease since %s by the host's clock (it is valid for %s)", l.holder, l.seen.UTC().Format(time.RFC3339), l.duration)
		set(corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonAgentLeaseExpired, msg)
		set(corev1beta1.ClusterOffline, metav1.ConditionTrue, corev1beta1.ReasonAgentLeaseExpired, msg)
	default:
		set(corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonAgentRenewing, fmt.Sprintf("the agent %s renews its Lease on the host", l.holder))
		set(corev1beta1.ClusterOffline, metav1.ConditionFalse, corev1beta1.ReasonAgentRenewing, "the agent reaches the host")
		if l.version != "" {
			st.KubernetesVersion = l.version
		}
	}
}
