package propagation

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
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

// classify is the write decision for one cluster's copy (DecideWrite),
// and the finding it holds: with the time the member event that revealed
// the drift arrived, when one did.
func (a *applier) classify(in *syncInput, cluster string, desired, existing *unstructured.Unstructured, policy drift.Policy) (Decision, finding, error) {
	var f finding
	if at, ok := a.watches.takeChange(cluster, desired.GetNamespace(), desired.GetName()); ok {
		f.seenAt = at
	}
	prev, recorded := in.previous[cluster]
	d, err := DecideWrite(Copy{Type: a.typ, Fed: in.fed, Versions: in.v, Previous: prev, Recorded: recorded,
		Desired: desired, Live: existing, Policy: policy, Force: in.force})
	if err != nil {
		return d, f, err
	}
	f.state, f.changes, f.adopted = d.State, d.Changes, d.Adopted
	if f.state != "" && !f.seenAt.IsZero() {
		driftDetectionSeconds.Observe(time.Since(f.seenAt).Seconds())
	}
	return d, f, nil
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

// reported is the result of a sync that leaves a drifted copy alone, as the
// Alert policy says.
func reported(name string, d Decision, existing *unstructured.Unstructured, policy drift.Policy) clusterResult {
	return clusterResult{name: name, reason: string(d.State), state: d.State, object: existing, changes: d.Changes, remediation: policy.Remediation, message: d.Reason}
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
