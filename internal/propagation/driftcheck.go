package propagation

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// finding is the drift a sync found in one cluster, before acting on it.
type finding struct {
	// state is "" when the copy is in sync, new, or simply behind a change
	// the control plane just made.
	state   typesv1beta1.DriftState
	changes []drift.Change
	// seenAt is when the member event that revealed the drift arrived;
	// zero when no event did (a resync, a cluster back from an outage).
	seenAt time.Time
	// adopted is set for an unstamped copy that holds what desired says:
	// it is current as it is, and is not written.
	adopted bool
}

// outOfBand tells whether the finding is someone else's doing in the
// member, which the remediation policy governs.
func (f finding) outOfBand() bool {
	return f.state == typesv1beta1.ModifiedOutOfBand || f.state == typesv1beta1.Missing
}

// policyFor is the drift policy of one cluster; with retainReplicas, the
// member's replicas are never drift.
func (a *applier) policyFor(spec render.Spec, cluster string) drift.Policy {
	p := drift.PolicyFor(spec.DriftPolicy, cluster, a.defaultRemediation)
	if spec.RetainReplicas {
		p.IgnorePaths = append(p.IgnorePaths, "/spec/replicas")
	}
	return p
}

// classify tells how existing, the member's copy (nil when it has none),
// differs from desired, whose content hash is hash.
func (a *applier) classify(in *syncInput, cluster string, desired, existing *unstructured.Unstructured, hash string, policy drift.Policy) (finding, error) {
	var f finding
	if at, ok := a.watches.takeChange(cluster, desired.GetNamespace(), desired.GetName()); ok {
		f.seenAt = at
	}
	prev, recorded := in.previous[cluster]
	switch {
	case existing == nil:
		if recorded && prev.Version != "" {
			// Fedwarden wrote a copy there, and it is gone.
			f.state = typesv1beta1.Missing
		}
	case unstamped(existing):
		var err error
		if f, err = a.classifyUnstamped(in, cluster, desired, existing, policy, f); err != nil {
			return f, err
		}
	case existing.GetAnnotations()[typesv1beta1.AnnotationDesiredHash] != hash || existing.GetLabels()[typesv1beta1.LabelManaged] != "true":
		if recorded && missedUpdates(prev.State) {
			f.state = typesv1beta1.OutdatedOverrides
			if existing.GetAnnotations()[typesv1beta1.AnnotationTemplateVersion] != string(in.v.Template) {
				f.state = typesv1beta1.OutdatedTemplate
			}
		}
	default:
		changes, err := policy.Detect(desired, existing, FieldManager)
		if err != nil {
			return f, err
		}
		if f.changes = changes; len(f.changes) > 0 {
			f.state = typesv1beta1.ModifiedOutOfBand
		}
	}
	if f.state != "" && !f.seenAt.IsZero() {
		driftDetectionSeconds.Observe(time.Since(f.seenAt).Seconds())
	}
	return f, nil
}

// unstamped tells whether existing is a managed copy that Fedwarden never
// wrote: it has the kubefed.io/managed label, which KubeFed also sets, but
// not the desired hash that every write of Fedwarden's stamps. Such are the
// copies KubeFed placed, found after `fedwarden migrate kubefed`.
func unstamped(existing *unstructured.Unstructured) bool {
	return existing.GetLabels()[typesv1beta1.LabelManaged] == "true" && existing.GetAnnotations()[typesv1beta1.AnnotationDesiredHash] == ""
}

// classifyUnstamped judges a copy Fedwarden never wrote. Once recorded
// InSync, a copy whose resource changed since is behind it, as a stamped
// copy with an old hash is: it is written. Otherwise every field desired
// sets is compared, whoever owns it (the copy's writer is not Fedwarden):
// none differs, and the copy is adopted as it is, with no write; any that
// does is drift, which the policy governs.
func (a *applier) classifyUnstamped(in *syncInput, cluster string, desired, existing *unstructured.Unstructured, policy drift.Policy, f finding) (finding, error) {
	prev, recorded := in.previous[cluster]
	if recorded && (prev.State == typesv1beta1.InSync || prev.State == typesv1beta1.RolloutPending) && (prev.TemplateVersion != in.v.Template || prev.OverrideVersion != in.v.Override) {
		return f, nil
	}
	changes, err := policy.Detect(desired, existing, FieldManager)
	if err != nil {
		return f, err
	}
	if len(changes) == 0 {
		f.adopted = true
		return f, nil
	}
	f.state, f.changes = typesv1beta1.ModifiedOutOfBand, deepest(changes)
	return f, nil
}

// deepest drops each change whose path holds another change's path. A
// writer that owns a map as a whole, as KubeFed's update owns data once
// kubectl took data.A, would otherwise be named as changing it too.
func deepest(changes []drift.Change) []drift.Change {
	out := make([]drift.Change, 0, len(changes))
	for _, c := range changes {
		holds := false
		for _, other := range changes {
			if strings.HasPrefix(other.Path, c.Path+"/") {
				holds = true
				break
			}
		}
		if !holds {
			out = append(out, c)
		}
	}
	return out
}

// missedUpdates tells whether a cluster in state s may have missed updates
// of the control plane: it could not be written to.
func missedUpdates(s typesv1beta1.DriftState) bool {
	switch s {
	case typesv1beta1.Unreachable, typesv1beta1.ApplyFailed, typesv1beta1.OutdatedTemplate, typesv1beta1.OutdatedOverrides:
		return true
	}
	return false
}

// reported is the result of a sync that leaves a drifted copy alone, as the
// Alert policy says.
func reported(name string, f finding, existing *unstructured.Unstructured, policy drift.Policy) clusterResult {
	res := clusterResult{name: name, reason: string(f.state), state: f.state, object: existing, changes: f.changes, remediation: policy.Remediation}
	switch f.state {
	case typesv1beta1.Missing:
		res.message = fmt.Sprintf("the copy was deleted in the member; not recreated (remediation %s)", policy.Remediation)
	default:
		paths, managers := drift.Paths(f.changes)
		by := "someone"
		if len(managers) > 0 {
			by = strings.Join(managers, ", ")
		}
		res.message = fmt.Sprintf("changed in the member by %s: %s; left as it is (remediation %s)", by, strings.Join(paths, ", "), policy.Remediation)
	}
	return res
}

// describe says what a finding was, for an Event.
func (f finding) describe() string {
	if len(f.changes) == 0 {
		return string(f.state)
	}
	paths, managers := drift.Paths(f.changes)
	s := fmt.Sprintf("%s: %s", f.state, strings.Join(paths, ", "))
	if len(managers) > 0 {
		s += " (changed by " + strings.Join(managers, ", ") + ")"
	}
	return s
}
