package plan

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// engine is the controller's rollout decision (propagation.DecideRollout)
// on the planned resource, made as its next sync would make it.
type engine struct {
	propagation.RolloutDecision
	// newRevision: the planned content makes a new revision, numbered
	// Input.Latest; else it is the newest revision's content.
	newRevision bool
}

// runEngine decides the rollout of the planned resource as the
// controller's next sync would, under strategy Waves; nil under All. The
// revisions are the host's (none for a resource it does not have), with
// the planned content recorded by a dry-run store; the previous decision
// is the host's status.rollout. When plan may not list the resource's
// ControllerRevisions it returns nil and says why: the timing is then
// plan's approximation.
func (p *planner) runEngine(ctx context.Context, in *planInput) (*engine, string, error) {
	s := in.s
	if s.spec.Rollout == nil || s.spec.Rollout.Strategy != typesv1beta1.RolloutWaves {
		return nil, "", nil
	}
	namespace := propagation.CPVKey(s.kind.Type, s.fed, p.controlPlane).Namespace
	var revs []rollout.Revision
	var previous *typesv1beta1.RolloutStatus
	if s.exists {
		list, err := (&rollout.Store{Reader: p.host}).List(ctx, s.fed, namespace)
		switch {
		case apierrors.IsForbidden(err):
			return nil, fmt.Sprintf("plan may not list the ControllerRevisions in namespace %s (%v): the waves' progress is not known, "+
				"and when each cluster gets the change is plan's approximation", namespace, err), nil
		case err != nil:
			return nil, "", err
		}
		revs, previous = list, propagation.FederatedStatusOf(s.current).Rollout
	}
	d, err := propagation.DecideRollout(ctx, rollout.Store{Reader: p.host, DryRun: true}, s.kind.Type, s.fed, s.spec, s.cpv,
		in.placed.Placement, in.clusters, namespace, revs, previous)
	if err != nil {
		return nil, "", err
	}
	return &engine{RolloutDecision: d, newRevision: len(revs) == 0 || revs[len(revs)-1].Key != rollout.KeyOf(s.fed)}, "", nil
}

// summarize fills r with the decision: the revisions, each wave's phase
// and message, and where the rollout is, as conditions RolledOut and
// RolloutHalted would say it.
func (e *engine) summarize(r *planreport.Rollout) {
	d := e.Decision
	st := d.Status
	r.Engine, r.Revision, r.NewRevision, r.FromRevision, r.Complete = true, int64(st.Revision), e.newRevision, int64(st.FromRevision), d.Complete
	for i := range r.Waves {
		if i < len(st.Waves) {
			r.Waves[i].Phase, r.Waves[i].Message = string(st.Waves[i].Phase), st.Waves[i].Message
		}
	}
	switch {
	case d.Halt != nil:
		r.Halted = &planreport.Halt{Reason: d.Halt.Reason, Message: d.Halt.Message}
		r.Progress = d.Halt.Message
	case !d.Complete:
		r.Progress = rollout.Progress(st)
	default:
		r.Progress = fmt.Sprintf("every placed cluster targets revision %d", st.Revision)
	}
}

// timing sets c's timing from the decision: the revision the engine gives
// the cluster and, for a write of content the copy does not have yet,
// whether it is made now or the cluster is held at an earlier revision,
// and why. A deletion, or a write that only heals drift or acts on
// kubefed.io/resync, is made now.
func (e *engine) timing(c *planreport.Cluster, newContent bool) {
	c.Now = c.Action.Writes()
	if !c.Placed {
		return
	}
	target, ok := e.Decision.Effective(c.Name, e.Revisions)
	if !ok {
		return
	}
	c.TargetRevision, c.Held = int64(target), target < e.Input.Latest
	if !c.Now || c.Action == planreport.ActionDelete || !newContent {
		return
	}
	if !c.Held {
		c.Reason += "; " + e.Decision.NowReason(e.Input, c.Name)
		return
	}
	c.Now = false
	c.Reason += "; " + e.Decision.HeldReason(e.Input, c.Name, target)
	if c.Action == planreport.ActionCreate {
		c.Reason += fmt.Sprintf("; until then the controller creates its copy at revision %d", target)
	}
}
