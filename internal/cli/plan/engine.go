package plan

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// engine is the controller's rollout engine, rollout.Decide, run on the
// planned resource with the inputs the controller's rollout stage would
// give it (propagation's planRollout and rolloutClusters).
type engine struct {
	in rollout.Input
	d  rollout.Decision
	// newRevision: the planned content makes a new revision, numbered
	// in.Latest; else it is the newest revision's content.
	newRevision bool
	// revs are the revisions kept, as the rollout stage leaves them.
	revs []rollout.Revision
}

// newEngine runs the engine on in; newRevision says whether in.Latest is
// a revision the planned change makes.
func newEngine(in rollout.Input, newRevision bool, revs []rollout.Revision) *engine {
	return &engine{in: in, d: rollout.Decide(in), newRevision: newRevision, revs: revs}
}

// runEngine decides the rollout of the planned resource as the
// controller's next sync would, under strategy Waves; nil under All. The
// latest revision is the newest ControllerRevision when the planned
// content is its, else a new one after it; the previous decision is the
// host's status.rollout; each placed cluster is as its CPV entry says.
// When plan may not list the resource's ControllerRevisions it returns
// nil and says why: the timing is then plan's approximation.
func (p *planner) runEngine(ctx context.Context, in *planInput, waves []rollout.Wave) (*engine, string, error) {
	s := in.s
	if s.spec.Rollout == nil || s.spec.Rollout.Strategy != typesv1beta1.RolloutWaves {
		return nil, "", nil
	}
	var revs []rollout.Revision
	namespace := s.fed.GetNamespace()
	if namespace == "" {
		namespace = p.controlPlane
	}
	if s.exists {
		store := rollout.Store{Reader: p.host}
		list, err := store.List(ctx, s.fed, namespace)
		switch {
		case apierrors.IsForbidden(err):
			return nil, fmt.Sprintf("plan may not list the ControllerRevisions in namespace %s (%v): the waves' progress is not known, "+
				"and when each cluster gets the change is plan's approximation", namespace, err), nil
		case err != nil:
			return nil, "", err
		}
		revs = list
	}
	// The revision the controller's rollout stage would make of the
	// planned content, with nothing written.
	newRevision := len(revs) == 0 || revs[len(revs)-1].Key != rollout.KeyOf(s.fed)
	latestRev, revs, err := (&rollout.Store{Reader: p.host, DryRun: true}).Ensure(ctx, s.fed, namespace, revs, in.v)
	if err != nil {
		return nil, "", err
	}
	latest := latestRev.Number
	input, err := propagation.RolloutInput(s.kind.Type, s.fed, s.spec, s.cpv, in.placed.decided, in.clusters, revs, latest, previousRollout(s.current))
	if err != nil {
		return nil, "", err
	}
	input.Waves = waves
	return newEngine(input, newRevision, revs), "", nil
}

// previousRollout is the status.rollout of current, the resource as the
// host has it; nil when there is none.
func previousRollout(current *unstructured.Unstructured) *typesv1beta1.RolloutStatus {
	if current == nil {
		return nil
	}
	raw, found, _ := unstructured.NestedMap(current.Object, "status", "rollout")
	if !found {
		return nil
	}
	st := &typesv1beta1.RolloutStatus{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, st); err != nil {
		return nil
	}
	return st
}

// summarize fills r with the decision: the revisions, each wave's phase
// and message, and where the rollout is, as conditions RolledOut and
// RolloutHalted would say it.
func (e *engine) summarize(r *Rollout) {
	st := e.d.Status
	r.Engine, r.Revision, r.NewRevision, r.FromRevision, r.Complete = true, int64(st.Revision), e.newRevision, int64(st.FromRevision), e.d.Complete
	for i := range r.Waves {
		if i < len(st.Waves) {
			r.Waves[i].Phase, r.Waves[i].Message = string(st.Waves[i].Phase), st.Waves[i].Message
		}
	}
	switch {
	case e.d.Halt != nil:
		r.Halted = &Halt{Reason: e.d.Halt.Reason, Message: e.d.Halt.Message}
		r.Progress = e.d.Halt.Message
	case !e.d.Complete:
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
func (e *engine) timing(c *Cluster, newContent bool) {
	c.Now = c.Action.writes()
	if !c.Placed {
		return
	}
	target, ok := e.d.Effective(c.Name, e.revs)
	if !ok {
		return
	}
	c.TargetRevision, c.Held = int64(target), target < e.in.Latest
	if !c.Now || c.Action == ActionDelete || !newContent {
		return
	}
	if !c.Held {
		c.Reason += "; " + e.d.NowReason(e.in, c.Name)
		return
	}
	c.Now = false
	c.Reason += "; " + e.d.HeldReason(e.in, c.Name, target)
	if c.Action == ActionCreate {
		c.Reason += fmt.Sprintf("; until then the controller creates its copy at revision %d", target)
	}
}
