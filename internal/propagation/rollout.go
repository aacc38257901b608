package propagation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// rolloutPlan is the rollout stage's plan for a resource whose
// spec.rollout is Waves: the engine's decision, and what the CPV tells the
// Pull clusters of it.
type rolloutPlan struct {
	RolloutDecision
	// pull is what the CPV tells the agents of the Pull clusters placed.
	pull *pullPlan
}

// RolloutDecision is the rollout engine's decision for a resource whose
// spec.rollout is Waves, made as the controller's rollout stage makes it
// (DecideRollout): the revision each placed cluster is to have.
type RolloutDecision struct {
	// Revisions are the resource's revisions as the store leaves them,
	// the latest among them; Latest is the revision of its current
	// content.
	Revisions []rollout.Revision
	Latest    rollout.Revision
	// Input is what the engine decided from (Input.Previous: the rollout
	// status before this sync), Decision what it decided.
	Input    rollout.Input
	Decision rollout.Decision
	// held are the sync inputs of the earlier revisions read so far, by
	// number (see input).
	held map[typesv1beta1.Revision]*syncInput
}

// pullPlan is what the CPV's spec tells Pull clusters' agents, which may
// not read ControllerRevisions: the revision each is to apply
// (spec.clusters[].revision) and the latest's key and held revisions'
// content (spec.rollout). Nil without Pull clusters placed.
type pullPlan struct {
	revisions map[string]typesv1beta1.Revision
	rollout   *typesv1beta1.PullRollout
}

// errWavesOfSecrets refuses a rollout in waves of a kind whose copies are
// Secrets: its earlier revisions would keep the Secret's data in
// ControllerRevisions, which Kubernetes' view role reads, and which a Pull
// cluster's held revision would copy into the CPV. The sync stops before
// anything is written: the copies stay as they are.
var errWavesOfSecrets = errors.New("spec.rollout.strategy Waves is not offered for a kind whose copies are Secrets: " +
	"its earlier revisions would keep the Secret's data in ControllerRevisions, which Kubernetes' view role can read; " +
	"use strategy All, or roll out a Secret of a new name with the workload that mounts it")

// defaultRevisionHistory is how many revisions are kept when
// spec.rollout.revisionHistoryLimit is unset.
const defaultRevisionHistory = 10

// planRollout is the rollout stage, between placement and apply: under
// spec.rollout Waves it records the resource's current content as its
// latest revision (a ControllerRevision), decides which revision each
// placed cluster is to have (DecideRollout), prunes the revisions past the
// history limit, and plans the Pull clusters' part. Under All (the
// default) it does nothing: every cluster gets the latest. It never
// removes a cluster from the placement: it only chooses which revision a
// placed cluster's copy is written at.
func (r *Reconciler) planRollout(ctx context.Context, s *syncState) error {
	s.rollout = nil
	if s.spec.Rollout == nil || s.spec.Rollout.Strategy != typesv1beta1.RolloutWaves {
		return nil
	}
	if err := r.typ.RefusedRollout(s.spec.Rollout); err != nil {
		return reconcile.TerminalError(err)
	}
	store := rollout.Store{Client: r.client, Reader: r.reader}
	namespace := r.record.key(s.fed).Namespace
	revs, err := store.List(ctx, s.fed, namespace)
	if err != nil {
		return err
	}
	d, err := DecideRollout(ctx, store, r.typ, s.fed, s.spec, s.cpv, Placement{s.t}, s.clusters, namespace, revs, FederatedStatusOf(s.fed).Rollout)
	if err != nil {
		return err
	}
	plan := &rolloutPlan{RolloutDecision: d}
	if err := store.Prune(ctx, namespace, plan.Revisions, historyLimit(s.spec.Rollout), plan.kept()); err != nil {
		return err
	}
	if plan.pull, err = plan.pullPlan(s); err != nil {
		return err
	}
	s.rollout = plan
	return nil
}

// DecideRollout is the core of the rollout stage under spec.rollout Waves,
// which the controller's sync (planRollout) and fedwarden plan both run: it
// records fed's current content as its latest revision in store (a DryRun
// store writes nothing, and returns what it would have written), then runs
// the rollout engine on fed placed as pl. revs are fed's revisions in
// namespace, as store.List returns them; previous is the rollout status the
// host has.
func DecideRollout(ctx context.Context, store rollout.Store, typ Type, fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion,
	pl Placement, clusters []corev1beta1.FederatedCluster, namespace string, revs []rollout.Revision, previous *typesv1beta1.RolloutStatus) (RolloutDecision, error) {
	latest, revs, err := store.Ensure(ctx, fed, namespace, revs, InputsOf(fed, spec, cpv, pl.t.replicas).Versions)
	if err != nil {
		return RolloutDecision{}, err
	}
	d := RolloutDecision{Revisions: revs, Latest: latest, held: map[typesv1beta1.Revision]*syncInput{}}
	d.Input, err = engineInput(typ, fed, spec, cpv, pl.t, clusters, latest.Number, previous, func(n typesv1beta1.Revision) (*syncInput, error) {
		return d.input(fed, cpv, pl.t, n)
	})
	if err != nil {
		return RolloutDecision{}, err
	}
	d.Decision = rollout.Decide(d.Input)
	return d, nil
}

// kept are the revisions pruning keeps whatever the history limit: the
// latest, the one the rollout comes from, and those a cluster targets.
func (d *RolloutDecision) kept() map[typesv1beta1.Revision]bool {
	keep := map[typesv1beta1.Revision]bool{d.Latest.Number: true, d.Decision.Status.FromRevision: true}
	for _, target := range d.Decision.Targets {
		keep[target] = true
	}
	for _, c := range d.Input.Clusters {
		keep[c.Target] = true
	}
	return keep
}

// historyLimit is how many revisions r, spec.rollout, keeps.
func historyLimit(r *typesv1beta1.Rollout) int {
	if n := r.RevisionHistoryLimit; n != nil {
		return int(*n)
	}
	return defaultRevisionHistory
}

// pullPlan is the plan's part for the Pull clusters placed: each one's
// target revision, the latest when its own is not kept any more (as
// heldInputs does for every cluster), and the content of those held at an
// earlier one.
func (p *rolloutPlan) pullPlan(s *syncState) (*pullPlan, error) {
	if !placesPull(s.t.names, s.set) {
		return nil, nil
	}
	latest := p.Decision.Status.Revision
	out := &pullPlan{
		revisions: map[string]typesv1beta1.Revision{},
		rollout:   &typesv1beta1.PullRollout{Latest: rollout.RefOf(latest, rollout.KeyOf(s.fed))},
	}
	for _, name := range s.t.names {
		if !isPull(s.set[name]) {
			continue
		}
		target, _ := p.Decision.Effective(name, p.Revisions)
		out.revisions[name] = target
		if target == latest {
			continue
		}
		rev, _ := rollout.ByNumber(p.Revisions, target)
		if slices.ContainsFunc(out.rollout.Held, func(h typesv1beta1.HeldRevision) bool { return h.Number == target }) {
			continue
		}
		h, err := rollout.Held(rev)
		if err != nil {
			return nil, err
		}
		out.rollout.Held = append(out.rollout.Held, h)
	}
	slices.SortFunc(out.rollout.Held, func(a, b typesv1beta1.HeldRevision) int { return int(a.Number - b.Number) })
	return out, nil
}

// pullPlanOf is s's pull plan; nil under strategy All.
func pullPlanOf(s *syncState) *pullPlan {
	if s.rollout == nil {
		return nil
	}
	return s.rollout.pull
}

// engineInput is the rollout engine's input: spec.rollout's waves over the
// placed clusters, the previous status, and what the engine knows of each
// placed cluster. at returns the sync input of a kept revision, nil for
// one that is not kept.
func engineInput(typ Type, fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, t targets,
	clusters []corev1beta1.FederatedCluster, latest typesv1beta1.Revision, previous *typesv1beta1.RolloutStatus, at func(typesv1beta1.Revision) (*syncInput, error)) (rollout.Input, error) {
	waves, err := rollout.Waves(spec.Rollout, t.names, clusters)
	if err != nil {
		return rollout.Input{}, reconcile.TerminalError(err)
	}
	cs, err := rolloutClusters(typ, fed, spec, cpv, t, latest, at)
	if err != nil {
		return rollout.Input{}, err
	}
	a := fed.GetAnnotations()
	return rollout.Input{
		Spec: *spec.Rollout, Latest: latest, Previous: previous, Waves: waves, Clusters: cs,
		ApproveWave: a[typesv1beta1.AnnotationApproveWave], AllAtOnce: a[typesv1beta1.AnnotationAllAtOnce], Now: time.Now(),
	}, nil
}

// rolloutClusters is what the rollout engine knows of each placed
// cluster, from its CPV entry, and whether the latest revision changes
// the copy of a cluster at an earlier one. A Pull cluster's entry is its
// agent's, which records the revision it applied (pullPlan tells it
// which).
func rolloutClusters(typ Type, fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, t targets,
	latest typesv1beta1.Revision, at func(typesv1beta1.Revision) (*syncInput, error)) (map[string]rollout.Cluster, error) {
	out := map[string]rollout.Cluster{}
	for _, name := range t.names {
		cv, _ := entryOf(cpv, name)
		c := rollout.Cluster{Target: cv.TargetRevision, State: cv.State, Health: cv.Health, HealthReason: cv.HealthReason}
		if c.State == typesv1beta1.RolloutPending {
			c.State = typesv1beta1.InSync // in sync at its own target
		}
		if c.Target != 0 && c.Target != latest {
			was, err := at(c.Target)
			if err != nil {
				return nil, err
			}
			c.Unchanged = sameCopy(typ, was, fed, spec, t, name)
		}
		out[name] = c
	}
	return out, nil
}

// sameCopy tells whether cluster's copy is the same at was, an earlier
// revision's input, as fed renders it now; false when was is nil (not
// kept any more) or either does not render.
func sameCopy(typ Type, was *syncInput, fed *unstructured.Unstructured, spec render.Spec, t targets, cluster string) bool {
	if was == nil {
		return false
	}
	replicas := replicasIn(t.replicas, cluster)
	before, err := typ.Render(was.fed, was.spec, cluster, replicas)
	if err != nil {
		return false
	}
	now, err := typ.Render(fed, spec, cluster, replicas)
	return err == nil && render.ContentHash(before.Object) == render.ContentHash(now.Object)
}

// input returns the sync input of revision n of fed, whose CPV is cpv,
// placed as t; nil when it is not kept. An input read once is kept for the
// rest of the sync.
func (d *RolloutDecision) input(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, t targets, n typesv1beta1.Revision) (*syncInput, error) {
	if in, ok := d.held[n]; ok {
		return in, nil
	}
	rev, ok := rollout.ByNumber(d.Revisions, n)
	if !ok {
		return nil, nil
	}
	in, err := revisionInput(fed, rev, cpv, t)
	if err != nil {
		return nil, err
	}
	d.held[n] = in
	return in, nil
}

// revisionInput is the sync input of fed as it was at revision rev (its
// content and versions): what the host syncs a held cluster to, and a Pull
// cluster's agent its own.
func revisionInput(fed *unstructured.Unstructured, rev rollout.Revision, cpv *typesv1beta1.ClusterPropagatedVersion, t targets) (*syncInput, error) {
	at := rollout.Apply(fed, rev)
	spec, err := render.ParseSpec(at)
	if err != nil {
		return nil, fmt.Errorf("reading revision %d of %s %s: %w", rev.Number, fed.GetKind(), fed.GetName(), err)
	}
	in := newSyncInput(at, spec, cpv, t)
	in.v = rev.Versions
	return in, nil
}

// heldInputs gives in, the latest revision's sync input, the inputs of the
// clusters the plan holds at an earlier revision. A cluster whose earlier
// revision is not kept any more gets the latest.
func (p *rolloutPlan) heldInputs(s *syncState, in *syncInput) error {
	if p == nil {
		return nil
	}
	in.targets = map[string]typesv1beta1.Revision{}
	in.held = map[string]*syncInput{}
	for name := range p.Decision.Targets {
		target, _ := p.Decision.Effective(name, p.Revisions)
		in.targets[name] = target
		if target == p.Decision.Status.Revision {
			continue
		}
		h, err := p.input(s.fed, s.cpv, s.t, target)
		if err != nil {
			return err
		}
		h.joined, h.keptByNamespace, h.resync, h.force = in.joined, in.keptByNamespace, in.resync, in.force
		in.held[name] = h
	}
	return nil
}

// rolloutStatus sets the rollout's status and conditions in st; without
// a plan (strategy All) it removes them.
func rolloutStatus(st *typesv1beta1.FederatedStatus, p *rolloutPlan, generation int64, now metav1.Time) {
	if p == nil {
		st.Rollout = nil
		meta.RemoveStatusCondition(&st.Conditions, typesv1beta1.FederatedRolledOut)
		meta.RemoveStatusCondition(&st.Conditions, typesv1beta1.FederatedRolloutHalted)
		return
	}
	d := p.Decision
	st.Rollout = d.Status.DeepCopy()
	reason, message := typesv1beta1.ReasonRolloutComplete, fmt.Sprintf("every placed cluster targets revision %d", d.Status.Revision)
	switch {
	case d.Halt != nil:
		reason, message = d.Halt.Reason, d.Halt.Message
	case !d.Complete:
		reason, message = typesv1beta1.ReasonRolloutProgressing, bounded(rollout.Progress(d.Status), 1024)
	}
	setCondition(&st.Conditions, typesv1beta1.FederatedRolledOut, d.Complete, reason, message, generation, now)
	if d.Halt != nil {
		setCondition(&st.Conditions, typesv1beta1.FederatedRolloutHalted, true, d.Halt.Reason, d.Halt.Message, generation, now)
	} else {
		setCondition(&st.Conditions, typesv1beta1.FederatedRolloutHalted, false, typesv1beta1.ReasonRolloutNotHalted, "the rollout is not halted", generation, now)
	}
}

// recordRollout emits an Event for each wave that started, and a Warning
// when the rollout halts.
func (rep *reporter) recordRollout(fed *unstructured.Unstructured, p *rolloutPlan) {
	if p == nil || rep.recorder == nil {
		return
	}
	for _, w := range p.Decision.Started {
		rep.recorder.Eventf(fed, nil, "Normal", typesv1beta1.EventWaveStarted, "Rollout", "revision %d: wave %s started", p.Decision.Status.Revision, w)
	}
	if p.Decision.Halt == nil || wasHalted(p.Input.Previous, p.Decision.Status.Revision) {
		return
	}
	rep.recorder.Eventf(fed, nil, "Warning", typesv1beta1.EventRolloutHalted, "Rollout", "revision %d halted: %s", p.Decision.Status.Revision, p.Decision.Halt.Message)
	if rep.driftNotifier != nil {
		rep.driftNotifier.Notify(notify.Transition{
			Kind: notify.RolloutHalted, Federated: rep.typ.Federated, Resource: rep.typ.FederatedResource, Target: rep.typ.Target,
			Namespace: fed.GetNamespace(), Name: fed.GetName(), Message: fmt.Sprintf("revision %d halted: %s", p.Decision.Status.Revision, p.Decision.Halt.Message),
		})
	}
}

func wasHalted(st *typesv1beta1.RolloutStatus, revision typesv1beta1.Revision) bool {
	if st == nil || st.Revision != revision {
		return false
	}
	for _, w := range st.Waves {
		if w.Phase == typesv1beta1.WaveHalted {
			return true
		}
	}
	return false
}
