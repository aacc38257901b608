package plan

import (
	"context"
	"fmt"
	"slices"
	"strconv"

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
}

// newEngine runs the engine on in; newRevision says whether in.Latest is
// a revision the planned change makes.
func newEngine(in rollout.Input, newRevision bool) *engine {
	return &engine{in: in, d: rollout.Decide(in), newRevision: newRevision}
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
	if s.exists {
		namespace := s.fed.GetNamespace()
		if namespace == "" {
			namespace = p.controlPlane
		}
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
	latest, newRevision, revs := nextRevision(revs, rollout.KeyOf(s.fed))
	input, err := propagation.RolloutInput(s.kind.Type, s.fed, s.spec, s.cpv, in.placed.decided, in.clusters, revs, latest, previousRollout(s.current))
	if err != nil {
		return nil, "", err
	}
	input.Waves = waves
	return newEngine(input, newRevision), "", nil
}

// nextRevision is the number the controller's rollout stage gives the
// content of key k (rollout.Store.Ensure): the newest revision's when it
// has that content; else the one after it, for a new content or one seen
// before, which Ensure renumbers, so that its old number names no revision
// any more. It returns revs as Ensure leaves them, for the lookups of the
// revisions clusters are held at.
func nextRevision(revs []rollout.Revision, k rollout.Key) (typesv1beta1.Revision, bool, []rollout.Revision) {
	if len(revs) == 0 {
		return 1, true, nil
	}
	newest := revs[len(revs)-1]
	if newest.Key == k {
		return newest.Number, false, revs
	}
	kept := slices.DeleteFunc(slices.Clone(revs), func(r rollout.Revision) bool { return r.Key == k })
	return newest.Number + 1, true, kept
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
	target, ok := e.d.Targets[c.Name]
	if !ok {
		return
	}
	c.TargetRevision, c.Held = int64(target), target < e.in.Latest
	if !c.Now || c.Action == ActionDelete || !newContent {
		return
	}
	if !c.Held {
		c.Reason += "; " + e.nowReason(c)
		return
	}
	c.Now = false
	c.Reason += "; " + e.heldReason(c.Name, target)
	if c.Action == ActionCreate {
		c.Reason += fmt.Sprintf("; until then the controller creates its copy at revision %d", target)
	}
}

// nowReason says why the cluster gets the latest revision now.
func (e *engine) nowReason(c *Cluster) string {
	latest := e.in.Latest
	got := fmt.Sprintf("gets revision %d now", latest)
	ec := e.in.Clusters[c.Name]
	i := rollout.WaveOf(e.in.Waves, c.Name)
	switch {
	case e.d.Status.FromRevision == 0:
		return got + ": a first revision goes to every cluster at once"
	case e.in.AllAtOnce == strconv.FormatInt(int64(latest), 10):
		return fmt.Sprintf("%s: %s: %s skips the waves", got, typesv1beta1.AnnotationAllAtOnce, e.in.AllAtOnce)
	case ec.Unchanged:
		return fmt.Sprintf("%s, wherever its wave is: its copy is the same as at revision %d", got, ec.Target)
	case ec.Target == latest:
		return got + ": its CPV entry targets it already"
	case i < 0 || i >= len(e.d.Status.Waves):
		return got
	case slices.Contains(e.d.Started, e.in.Waves[i].Name):
		return fmt.Sprintf("%s: wave %s starts", got, e.wave(i))
	}
	return fmt.Sprintf("%s: wave %s is %s", got, e.wave(i), e.d.Status.Waves[i].Phase)
}

// heldReason says why the decision holds the cluster at revision target:
// the rollout halted or paused, its wave awaits an approval or updates a
// few clusters at a time, or a wave before it is not complete yet.
func (e *engine) heldReason(cluster string, target typesv1beta1.Revision) string {
	held := fmt.Sprintf("held at revision %d", target)
	waves := e.d.Status.Waves
	i := rollout.WaveOf(e.in.Waves, cluster)
	j := slices.IndexFunc(waves, func(w typesv1beta1.WaveStatus) bool { return w.Phase != typesv1beta1.WaveComplete })
	if i < 0 || j < 0 || i >= len(waves) {
		return held
	}
	switch {
	case e.d.Halt != nil:
		return fmt.Sprintf("%s: the rollout of revision %d halted at wave %s (%s): %s; a new change of the template or overrides, or fedwarden rollout undo, starts a new rollout",
			held, e.in.Latest, e.wave(j), e.d.Halt.Reason, e.d.Halt.Message)
	case e.in.Spec.Paused:
		return fmt.Sprintf("%s: the rollout is paused (spec.rollout.paused) at wave %s: fedwarden rollout resume lets it go on", held, e.wave(j))
	case j == i && waves[i].Phase == typesv1beta1.WaveAwaitingApproval:
		return fmt.Sprintf("%s: wave %s waits for an approval: fedwarden rollout resume starts it", held, e.wave(i))
	case j == i && waves[i].Phase == typesv1beta1.WaveProgressing && e.in.Waves[i].Spec.MaxUnavailable != nil:
		return fmt.Sprintf("%s: wave %s updates %d of its clusters at a time (maxUnavailable), %s",
			held, e.wave(i), *e.in.Waves[i].Spec.MaxUnavailable, waves[i].Message)
	case j >= i:
		return fmt.Sprintf("%s: wave %s is %s%s", held, e.wave(i), waves[i].Phase, orEmpty(": ", waves[i].Message))
	}
	why := fmt.Sprintf("%s until wave %s starts; wave %s before it is %s%s", held, e.wave(i), e.wave(j), waves[j].Phase, orEmpty(": ", waves[j].Message))
	if e.in.Waves[i].Spec.Pause {
		why += fmt.Sprintf("; then wave %s waits for an approval (fedwarden rollout resume)", e.wave(i))
	}
	return why
}

// wave names wave i as the report numbers it: 2/3 main.
func (e *engine) wave(i int) string {
	return fmt.Sprintf("%d/%d %s", i+1, len(e.in.Waves), e.in.Waves[i].Name)
}

// orEmpty is prefix and s, or "" when s is.
func orEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
