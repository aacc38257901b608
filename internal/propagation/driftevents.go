package propagation

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
)

// recordDrift emits DriftDetected and DriftResolved Events on fed: for a
// drift this sync re-applied over, for a drift left alone that is new or
// changed, and for a cluster back in sync by other means.
func (r *Reconciler) recordDrift(fed *unstructured.Unstructured, in *syncInput, results []clusterResult) {
	if r.recorder == nil {
		return
	}
	for _, res := range results {
		if res.fromAgent {
			continue // a Pull cluster's agent records its own Events
		}
		prev := in.previous[res.name]
		switch {
		case res.healed.state != "":
			r.recorder.Eventf(fed, nil, "Warning", typesv1beta1.EventDriftDetected, "Detect", "cluster %s: %s; re-applied", res.name, res.healed.describe())
			r.recorder.Eventf(fed, nil, "Normal", typesv1beta1.EventDriftResolved, "Remediate", "cluster %s: in sync again", res.name)
		case isDrift(res.state) && (prev.State != res.state || !slices.Equal(prev.ChangedPaths, changedPaths(res))):
			r.recorder.Eventf(fed, nil, "Warning", typesv1beta1.EventDriftDetected, "Detect", "cluster %s: %s", res.name, res.message)
		case res.state == typesv1beta1.InSync && isDrift(prev.State):
			r.recorder.Eventf(fed, nil, "Normal", typesv1beta1.EventDriftResolved, "Detect", "cluster %s: in sync again", res.name)
		}
	}
}

// isDrift tells whether s is a drift state (not a failure to reach or
// write the cluster, which the Propagated condition reports).
func isDrift(s typesv1beta1.DriftState) bool {
	switch s {
	case typesv1beta1.ModifiedOutOfBand, typesv1beta1.Missing, typesv1beta1.OutdatedTemplate, typesv1beta1.OutdatedOverrides:
		return true
	}
	return false
}

func changedPaths(res clusterResult) []string {
	paths, _ := drift.Paths(res.changes)
	return paths
}
