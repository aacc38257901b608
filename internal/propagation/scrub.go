package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/render"
)

// ScrubberOf is the scrubber of a cluster's sync of fed, of type typ: for
// a kind whose target is a Secret, it takes fed's template values out of a
// member's words, and those of the copies the sync sees (Seen); nil for
// other kinds. The controller, the agent and fedwarden plan scrub with it.
func ScrubberOf(typ Type, fed *unstructured.Unstructured) *scrub.Scrubber {
	return scrub.For(typ.Target, render.Template(fed))
}

func (a *applier) scrubberOf(fed *unstructured.Unstructured) *scrub.Scrubber {
	return ScrubberOf(a.typ, fed)
}

// Seen adds to sc the values of the copies a sync rendered or read (nil
// ones are none).
func Seen(sc *scrub.Scrubber, objects ...*unstructured.Unstructured) {
	seen(sc, objects...)
}

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
