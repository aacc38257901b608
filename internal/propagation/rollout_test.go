package propagation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// A halt is told once: a Warning Event and a notification when the
// rollout halts, nothing more on the syncs that find it halted still; a
// wave that starts gets its Event.
func TestRecordRollout(t *testing.T) {
	t.Parallel()
	fed := &unstructured.Unstructured{}
	fed.SetNamespace("shop")
	fed.SetName("web")
	halted := rollout.Decision{
		Status: typesv1beta1.RolloutStatus{Revision: 3, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveHalted}}},
		Halt:   &rollout.Halt{Reason: typesv1beta1.ReasonClusterDegraded, Message: "cluster a is Degraded at revision 3 (ProgressDeadlineExceeded)"},
	}
	var evs events
	var got notifications
	rep := &reporter{recorder: &evs, driftNotifier: &got}
	rep.recordRollout(fed, &rolloutPlan{decision: halted, previous: &typesv1beta1.RolloutStatus{Revision: 3, Waves: []typesv1beta1.WaveStatus{{Phase: typesv1beta1.WaveProgressing}}}})
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning RolloutHalted revision 3 halted: cluster a is Degraded") {
		t.Errorf("Events %q", evs)
	}
	if len(got) != 1 || got[0].Kind != notify.RolloutHalted || got[0].Name != "web" || !strings.Contains(got[0].Message, "cluster a is Degraded") {
		t.Errorf("notified %+v", got)
	}
	rep.recordRollout(fed, &rolloutPlan{decision: halted, previous: &halted.Status})
	if len(evs) != 1 || len(got) != 1 {
		t.Errorf("a rollout halted still was told again: Events %q, notified %+v", evs, got)
	}
	rep.recordRollout(fed, &rolloutPlan{decision: rollout.Decision{Status: typesv1beta1.RolloutStatus{Revision: 4}, Started: []string{"canary"}}})
	if len(evs) != 2 || evs[1] != "Normal WaveStarted revision 4: wave canary started" {
		t.Errorf("Events %q", evs)
	}
}
