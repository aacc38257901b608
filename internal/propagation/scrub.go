package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/render"
)

// scrubberOf is the scrubber of a cluster's sync of fed: for a kind whose
// target is a Secret, it takes fed's template values out of a member's
// words, and those of the copies the sync sees (seen); nil for other
// kinds.
func (a *applier) scrubberOf(fed *unstructured.Unstructured) *scrub.Scrubber {
	if !scrub.IsSecret(a.typ.Target) {
		return nil
	}
	return scrub.For(a.typ.Target, render.Template(fed))
}

// seen adds to sc the values of the copies a sync rendered or read (nil
// ones are none).
func seen(sc *scrub.Scrubber, objects ...*unstructured.Unstructured) {
	for _, obj := range objects {
		if obj != nil {
			sc.Add(obj.Object)
		}
	}
}

// scrubbed is res with a member's words scrubbed of the values sc knows
// (see scrub.Scrubber). It is the one way out of the apply stage for
// them: syncCluster and deleteCopy, the host's and the agent's, return
// only scrubbed results, and everything that records a cluster's message
// (the CPV's entry, the resource's status and Propagated condition,
// Events, notifications, logs, the error an agent returns) reads it from
// there. A Pull cluster's entry, written by its agent, is scrubbed again
// where the host reads it (syncAll), with the values the host knows: an
// agent of an earlier version wrote it unscrubbed.
func scrubbed(res clusterResult, sc *scrub.Scrubber) clusterResult {
	res.message = sc.Scrub(res.message, res.answer)
	res.answer = nil
	return res
}
