package propagation

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/notify"
)

// clusterRef is the FederatedCluster name, as the related object of an
// Event about one cluster's copy. The events library merges Events of one
// object, reason and action into a series that keeps the first note: with
// the cluster as related object, a failure or drift in a second cluster is
// an Event of its own, not a count on the first one's.
func clusterRef(name string) *corev1beta1.FederatedCluster {
	fc := &corev1beta1.FederatedCluster{}
	fc.APIVersion, fc.Kind = corev1beta1.GroupVersion.String(), "FederatedCluster"
	fc.Name = name
	return fc
}

// DriftNotifier is told of each drift transition of a copy, beside the
// Events recordDrift emits. Notify must not block.
type DriftNotifier interface {
	Notify(t notify.Transition)
}

// recordDrift emits DriftDetected and DriftResolved Events on fed, and
// tells the drift notifier: for a drift this sync re-applied over, for a
// drift left alone that is new or changed, and for a cluster back in sync
// by other means.
func (rep *reporter) recordDrift(fed *unstructured.Unstructured, in *syncInput, results []clusterResult) {
	if rep.recorder == nil && rep.driftNotifier == nil {
		return
	}
	for _, res := range results {
		if res.fromAgent || res.waiting {
			continue // a Pull cluster's agent records its own Events
		}
		prev := in.previous[res.name]
		for _, kind := range driftTransitions(prev, res, rep.clock()) {
			rep.recordDriftEvents(fed, prev, res, kind)
			if rep.driftNotifier != nil {
				rep.driftNotifier.Notify(rep.transition(fed, in, prev, res, kind))
			}
		}
	}
}

// clock is the reporter's now, time.Now when unset.
func (rep *reporter) clock() time.Time {
	if rep.now == nil {
		return time.Now()
	}
	return rep.now()
}

// driftTransitions tells which drift transitions res is, against the
// cluster's previous entry, at now: none, one, or the expiry of a waiver
// followed by what the policy then did.
func driftTransitions(prev typesv1beta1.ClusterVersion, res clusterResult, now time.Time) []notify.Kind {
	var out []notify.Kind
	if waiverExpired(prev, res, now) {
		out = append(out, notify.WaiverExpired)
	}
	if kind, ok := driftTransition(prev, res); ok {
		out = append(out, kind)
	}
	return out
}

// waiverExpired tells whether the waiver that kept the cluster's edit
// expired, rather than being removed or the edit ending, with this sync.
func waiverExpired(prev typesv1beta1.ClusterVersion, res clusterResult, now time.Time) bool {
	return prev.State == typesv1beta1.Waived && res.state != typesv1beta1.Waived && prev.WaivedUntil != nil && !prev.WaivedUntil.After(now)
}

// driftTransition tells which drift transition res is, against the
// cluster's previous entry, if any.
func driftTransition(prev typesv1beta1.ClusterVersion, res clusterResult) (notify.Kind, bool) {
	switch {
	case res.healed.state != "":
		return notify.Healed, true
	case isDrift(res.state) && (prev.State != res.state || !slices.Equal(prev.ChangedPaths, changedPaths(res))):
		switch {
		case res.state == typesv1beta1.Waived:
			return notify.Waived, true // kept until the waiver expires
		case res.remediation == typesv1beta1.RemediationAlert && (res.state == typesv1beta1.ModifiedOutOfBand || res.state == typesv1beta1.Missing):
			return notify.Alerted, true // left as it is
		}
		return notify.Detected, true
	case res.state == typesv1beta1.InSync && isDrift(prev.State):
		return notify.Resolved, true
	}
	return "", false
}

// recordDriftEvents emits the Events of one transition.
func (rep *reporter) recordDriftEvents(fed *unstructured.Unstructured, prev typesv1beta1.ClusterVersion, res clusterResult, kind notify.Kind) {
	if rep.recorder == nil {
		return
	}
	switch kind {
	case notify.Waived:
		rep.recorder.Eventf(fed, clusterRef(res.name), "Normal", typesv1beta1.EventDriftWaived, "Waive", "cluster %s: %s", res.name, res.message)
	case notify.WaiverExpired:
		rep.recorder.Eventf(fed, clusterRef(res.name), "Normal", typesv1beta1.EventWaiverExpired, "Expire", "cluster %s: %s", res.name, expiredWaiver(prev))
	case notify.Healed:
		rep.recorder.Eventf(fed, clusterRef(res.name), "Warning", typesv1beta1.EventDriftDetected, "Detect", "cluster %s: %s; re-applied", res.name, res.healed.describe())
		rep.recorder.Eventf(fed, clusterRef(res.name), "Normal", typesv1beta1.EventDriftResolved, "Remediate", "cluster %s: in sync again", res.name)
	case notify.Detected, notify.Alerted:
		rep.recorder.Eventf(fed, clusterRef(res.name), "Warning", typesv1beta1.EventDriftDetected, "Detect", "cluster %s: %s", res.name, res.message)
	case notify.Resolved:
		rep.recorder.Eventf(fed, clusterRef(res.name), "Normal", typesv1beta1.EventDriftResolved, "Detect", "cluster %s: in sync again", res.name)
	}
}

// transition is the notification of one transition: names of fields and
// managers, never values.
func (rep *reporter) transition(fed *unstructured.Unstructured, in *syncInput, prev typesv1beta1.ClusterVersion, res clusterResult, kind notify.Kind) notify.Transition {
	t := notify.Transition{
		Kind: kind, Federated: rep.typ.Federated, Resource: rep.typ.FederatedResource, Target: rep.typ.Target,
		Namespace: fed.GetNamespace(), Name: fed.GetName(), Cluster: res.name,
		State: res.state, TemplateVersion: in.v.Template, OverrideVersion: in.v.Override, Remediation: res.remediation,
	}
	if ep, ended := endedEpisode(prev, res, in.v, in.actedResync(), metav1.Now()); ended {
		t.ResolvedBy, t.Resync = ep.ResolvedBy, ep.Resync
	}
	switch kind {
	case notify.Healed:
		t.State = res.healed.state
		t.Paths, t.Managers = drift.Paths(res.healed.changes)
	case notify.Waived:
		t.Paths, t.Managers = drift.Paths(res.changes)
		t.Message = res.message
	case notify.WaiverExpired:
		t.State, t.Paths, t.Managers, t.Message = prev.State, prev.ChangedPaths, prev.ChangedBy, expiredWaiver(prev)
	case notify.Resolved:
		t.State, t.Paths, t.Managers = prev.State, prev.ChangedPaths, prev.ChangedBy
		if t.Remediation == "" {
			t.Remediation = prev.Remediation
		}
	default:
		t.Paths, t.Managers = drift.Paths(res.changes)
	}
	return t
}

// isDrift tells whether s is a drift state (not a failure to reach or
// write the cluster, which the Propagated condition reports).
func isDrift(s typesv1beta1.DriftState) bool {
	switch s {
	case typesv1beta1.ModifiedOutOfBand, typesv1beta1.Missing, typesv1beta1.OutdatedTemplate, typesv1beta1.OutdatedOverrides, typesv1beta1.Waived:
		return true
	}
	return false
}

func changedPaths(res clusterResult) []string {
	paths, _ := drift.Paths(res.changes)
	return paths
}

// recordFailures emits a Warning Event on fed for each cluster whose copy
// could not be rendered or written, or whose kind the cluster refuses or
// does not serve (its reason, ApplyFailed, AlreadyExists, Forbidden or
// KindNotServed, is the Event's), when that failure is new or its message
// changed: the Propagated condition holds the same message, bounded.
// Unreachable clusters are left to the FederatedCluster's own conditions,
// so that an outage does not raise one Event per resource.
func (rep *reporter) recordFailures(fed *unstructured.Unstructured, in *syncInput, results []clusterResult) {
	if rep.recorder == nil {
		return
	}
	for _, res := range results {
		if res.fromAgent || (res.state != typesv1beta1.ApplyFailed && res.state != typesv1beta1.AlreadyExists) {
			continue
		}
		prev := in.previous[res.name]
		if prev.State == res.state && prev.Message == bounded(res.message, 1024) {
			continue
		}
		rep.recorder.Eventf(fed, clusterRef(res.name), "Warning", res.reason, "Propagate", "cluster %s: %s", res.name, bounded(res.message, 1024))
	}
}

// expiredWaiver says which waiver expired, from the entry that it kept.
func expiredWaiver(prev typesv1beta1.ClusterVersion) string {
	msg := "the waiver of " + strings.Join(prev.ChangedPaths, ", ") + " expired at " + prev.WaivedUntil.UTC().Format(time.RFC3339)
	if w := prev.Waiver; w != nil {
		msg += " (" + w.Reason
		if w.Owner != "" {
			msg += ", " + w.Owner
		}
		msg += ")"
	}
	return msg + "; the drift policy applies again"
}
