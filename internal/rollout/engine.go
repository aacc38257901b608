package rollout

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Cluster is what the engine knows of one placed cluster: its CPV entry
// as the last sync wrote it.
type Cluster struct {
	// Target is the entry's targetRevision; 0 before the cluster had one.
	Target       typesv1beta1.Revision
	State        typesv1beta1.DriftState
	Health       corev1beta1.HealthState
	HealthReason string
	// Unchanged: the cluster's copy is the same at the latest revision as
	// at the one it is held at (the change is an override of other
	// clusters): it takes the latest at once, wherever its wave is.
	Unchanged bool
}

// Input is what one decision is made from.
type Input struct {
	Spec typesv1beta1.Rollout
	// Latest is the number of the resource's current content.
	Latest typesv1beta1.Revision
	// Previous is the status the last decision wrote; nil for none.
	Previous *typesv1beta1.RolloutStatus
	Waves    []Wave
	// Clusters are the placed clusters, by name.
	Clusters map[string]Cluster
	// ApproveWave and AllAtOnce are the resource's annotations of those
	// names.
	ApproveWave, AllAtOnce string
	Now                    time.Time
}

// Decision is the revision each placed cluster is to have now, and the
// rollout's status.
type Decision struct {
	Status  typesv1beta1.RolloutStatus
	Targets map[string]typesv1beta1.Revision
	// Halt is set when the rollout stopped in this decision or before.
	Halt *Halt
	// Started are the waves this decision started.
	Started []string
	// Requeue is when to decide again, though nothing changed; 0: never.
	Requeue time.Duration
	// Complete: every wave is complete.
	Complete bool
}

// Effective is the revision cluster is synced to under d: its target,
// or the latest (d.Status.Revision) when its target is not among revs,
// the revisions kept (renumbered as the latest, or pruned). False when d
// has no target for cluster.
func (d Decision) Effective(cluster string, revs []Revision) (typesv1beta1.Revision, bool) {
	target, ok := d.Targets[cluster]
	if !ok {
		return 0, false
	}
	if _, kept := ByNumber(revs, target); !kept {
		return d.Status.Revision, true
	}
	return target, true
}

// Halt is why a rollout stopped.
type Halt struct {
	Reason, Message string
}

// DefaultDeadline is a wave's progress deadline when
// progressDeadlineSeconds is unset.
const DefaultDeadline = 600 * time.Second

// poll is how soon a wave in progress is looked at again, besides the
// member events that call for a sync.
const poll = 2 * time.Second

// DegradedGrace is how long after its wave started a cluster Degraded at
// the new revision does not halt the rollout yet: a copy judged on the
// status its controller wrote for the previous revision (a Deployment
// rolled back after its progress deadline passed still says
// ProgressDeadlineExceeded until its controller has seen the new
// template) is not the new revision's failure.
const DegradedGrace = 15 * time.Second

// Decide advances the rollout of in.Latest as far as the clusters allow:
// a wave starts when the one before it is complete (and, with pause, once
// approved); it is complete when each of its clusters has been Healthy
// and InSync at the latest revision for bakeSeconds; a cluster Degraded at
// the latest revision, or a wave past its deadline, halts the rollout.
// Clusters of waves not started yet keep the revision they target, which
// their entries record.
func Decide(in Input) Decision {
	st := startingStatus(in)
	d := Decision{Status: st, Targets: map[string]typesv1beta1.Revision{}}
	if st.FromRevision == 0 || in.AllAtOnce == strconv.FormatInt(int64(in.Latest), 10) {
		// Nothing to hold any cluster at (a first revision), or the user
		// asked for all at once.
		for i := range d.Status.Waves {
			d.Status.Waves[i].Phase, d.Status.Waves[i].Message = typesv1beta1.WaveComplete, ""
		}
	}
	for name := range in.Clusters {
		d.Targets[name] = in.hold(name, st.FromRevision)
	}
	for i := range d.Status.Waves {
		if !d.advance(in, i) {
			break
		}
	}
	d.Complete = !slices.ContainsFunc(d.Status.Waves, func(w typesv1beta1.WaveStatus) bool { return w.Phase != typesv1beta1.WaveComplete })
	return d
}

// startingStatus is the status the decision starts from: the previous
// one when it is about in.Latest, else a new rollout from the revision
// the previous one was about, every wave pending.
func startingStatus(in Input) typesv1beta1.RolloutStatus {
	var st typesv1beta1.RolloutStatus
	if in.Previous != nil && in.Previous.Revision == in.Latest {
		st = *in.Previous.DeepCopy()
	} else {
		st = typesv1beta1.RolloutStatus{Revision: in.Latest, FromRevision: from(in)}
	}
	if len(st.Waves) != len(in.Waves) {
		st.Waves = make([]typesv1beta1.WaveStatus, len(in.Waves))
		for i := range st.Waves {
			st.Waves[i].Phase = typesv1beta1.WavePending
		}
	}
	for i, w := range in.Waves {
		st.Waves[i].Name = w.Name
		st.Waves[i].Clusters = nil
		for _, c := range w.Clusters {
			st.Waves[i].Clusters = append(st.Waves[i].Clusters, typesv1beta1.ClusterName(c))
		}
	}
	return st
}

// from is the revision a new rollout starts from: the one the previous
// rollout was about, else the newest one a cluster targets, else none.
func from(in Input) typesv1beta1.Revision {
	if in.Previous != nil && in.Previous.Revision != 0 && in.Previous.Revision < in.Latest {
		return in.Previous.Revision
	}
	var r typesv1beta1.Revision
	for _, c := range in.Clusters {
		if c.Target < in.Latest && c.Target > r {
			r = c.Target
		}
	}
	return r
}

// hold is the revision cluster name stays at while its wave has not
// reached it: the one it targets, else from; the latest when it changes
// nothing there, or when there is nothing to hold it at.
func (in Input) hold(name string, from typesv1beta1.Revision) typesv1beta1.Revision {
	c := in.Clusters[name]
	switch {
	case c.Unchanged:
		return in.Latest
	case c.Target != 0 && c.Target <= in.Latest:
		return c.Target
	case from != 0:
		return from
	}
	return in.Latest
}

// advance moves wave i on, setting its clusters' targets, and tells
// whether the next wave may be looked at.
func (d *Decision) advance(in Input, i int) bool {
	w := &d.Status.Waves[i]
	spec := in.Waves[i].Spec
	switch w.Phase {
	case typesv1beta1.WaveComplete:
		d.target(in.Waves[i].Clusters, in.Latest)
		return true
	case typesv1beta1.WaveHalted:
		d.Halt = &Halt{Reason: haltReason(w.Message), Message: w.Message}
		d.keepInFlight(in, i)
		return false
	}
	if in.Spec.Paused {
		w.Message = "the rollout is paused (spec.rollout.paused): fedwarden rollout resume"
		d.keepInFlight(in, i)
		return false
	}
	if w.Phase == typesv1beta1.WavePending || w.Phase == typesv1beta1.WaveAwaitingApproval {
		if spec.Pause && in.ApproveWave != fmt.Sprintf("%d/%d", in.Latest, i) {
			w.Phase, w.Message = typesv1beta1.WaveAwaitingApproval, "the wave waits for an approval: fedwarden rollout resume"
			return false
		}
		now := metav1.NewTime(in.Now)
		w.Phase, w.StartedAt, w.HealthySince, w.Message = typesv1beta1.WaveProgressing, &now, nil, ""
		d.Started = append(d.Started, w.Name)
	}
	return d.progress(in, i)
}

// progress updates a started wave i from its clusters' entries.
func (d *Decision) progress(in Input, i int) bool {
	w, spec := &d.Status.Waves[i], in.Waves[i].Spec
	if w.StartedAt == nil {
		// A status written by someone else without it: the wave starts now.
		now := metav1.NewTime(in.Now)
		w.StartedAt = &now
	}
	if bad := in.degraded(in.Waves[i].Clusters); bad != "" && in.Now.Sub(w.StartedAt.Time) >= DegradedGrace {
		w.Phase, w.Message = typesv1beta1.WaveHalted, bad
		d.Halt = &Halt{Reason: typesv1beta1.ReasonClusterDegraded, Message: bad}
		d.keepInFlight(in, i)
		return false
	}
	pending := d.moveClusters(in, i, spec)
	if len(pending) > 0 {
		w.Phase, w.HealthySince = typesv1beta1.WaveProgressing, nil
		w.Message = "waiting for " + strings.Join(pending, ", ") + " to be Healthy and InSync at the revision"
		deadline := DefaultDeadline
		if in.Spec.ProgressDeadlineSeconds != nil {
			deadline = time.Duration(*in.Spec.ProgressDeadlineSeconds) * time.Second
		}
		left := w.StartedAt.Add(deadline).Sub(in.Now)
		if left <= 0 {
			w.Phase = typesv1beta1.WaveHalted
			w.Message = fmt.Sprintf("progress deadline exceeded: %s not Healthy and InSync at revision %d %s after the wave started", strings.Join(pending, ", "), in.Latest, deadline)
			d.Halt = &Halt{Reason: typesv1beta1.ReasonDeadlineExceeded, Message: w.Message}
			return false
		}
		d.requeue(min(poll, left))
		return false
	}
	if in.allUnchanged(in.Waves[i].Clusters) || spec.BakeSeconds == 0 {
		w.Phase, w.Message = typesv1beta1.WaveComplete, ""
		return true
	}
	if w.Phase != typesv1beta1.WaveBaking || w.HealthySince == nil {
		now := metav1.NewTime(in.Now)
		w.Phase, w.HealthySince = typesv1beta1.WaveBaking, &now
	}
	left := w.HealthySince.Add(time.Duration(spec.BakeSeconds) * time.Second).Sub(in.Now)
	if left > 0 {
		w.Message = fmt.Sprintf("baking: every cluster Healthy and InSync; %s to go", left.Round(time.Second))
		d.requeue(min(poll, left))
		return false
	}
	w.Phase, w.Message = typesv1beta1.WaveComplete, ""
	return true
}

// moveClusters gives the latest revision to the clusters of wave i that
// have it already or that fit in maxUnavailable, and returns those not
// done yet.
func (d *Decision) moveClusters(in Input, i int, spec typesv1beta1.Wave) []string {
	limit := len(in.Waves[i].Clusters)
	if spec.MaxUnavailable != nil {
		limit = int(*spec.MaxUnavailable)
	}
	var pending []string
	inFlight := 0
	for _, name := range in.Waves[i].Clusters {
		if c := in.Clusters[name]; c.Target == in.Latest && !in.done(name) {
			inFlight++
		}
	}
	for _, name := range in.Waves[i].Clusters {
		c := in.Clusters[name]
		switch {
		case in.done(name):
			d.Targets[name] = in.Latest
			continue
		case c.Target == in.Latest:
			d.Targets[name] = in.Latest
		case inFlight < limit:
			d.Targets[name] = in.Latest
			inFlight++
		}
		pending = append(pending, name)
	}
	return pending
}

// keepInFlight keeps the latest revision for the clusters of wave i that
// target it already; the others stay where they are.
func (d *Decision) keepInFlight(in Input, i int) {
	for _, name := range in.Waves[i].Clusters {
		if in.Clusters[name].Target == in.Latest {
			d.Targets[name] = in.Latest
		}
	}
}

func (d *Decision) target(names []string, r typesv1beta1.Revision) {
	for _, name := range names {
		d.Targets[name] = r
	}
}

func (d *Decision) requeue(after time.Duration) {
	if after < time.Second {
		after = time.Second
	}
	if d.Requeue == 0 || after < d.Requeue {
		d.Requeue = after
	}
}

// done tells whether cluster name is at the latest revision, in sync and
// Healthy (or needs nothing of this rollout).
func (in Input) done(name string) bool {
	c := in.Clusters[name]
	if c.Unchanged {
		return true
	}
	return c.Target == in.Latest && c.State == typesv1beta1.InSync && (c.Health == corev1beta1.HealthHealthy || c.Health == "")
}

// degraded names the first of names Degraded at the latest revision, and
// why; "" when none is.
func (in Input) degraded(names []string) string {
	for _, name := range names {
		if c := in.Clusters[name]; c.Target == in.Latest && !c.Unchanged && c.Health == corev1beta1.HealthDegraded {
			return fmt.Sprintf("cluster %s is Degraded at revision %d (%s)", name, in.Latest, c.HealthReason)
		}
	}
	return ""
}

func (in Input) allUnchanged(names []string) bool {
	for _, name := range names {
		if !in.Clusters[name].Unchanged {
			return false
		}
	}
	return true
}

// haltReason is the condition reason of a wave halted with message.
func haltReason(message string) string {
	if strings.HasPrefix(message, "progress deadline exceeded") {
		return typesv1beta1.ReasonDeadlineExceeded
	}
	return typesv1beta1.ReasonClusterDegraded
}

// Progress says which wave the rollout of st waits on, and why: the
// message of the RolledOut condition while it is False.
func Progress(st typesv1beta1.RolloutStatus) string {
	for _, w := range st.Waves {
		if w.Phase != typesv1beta1.WaveComplete {
			msg := fmt.Sprintf("revision %d from %d: wave %s is %s", st.Revision, st.FromRevision, w.Name, w.Phase)
			if w.Message != "" {
				msg += ": " + w.Message
			}
			return msg
		}
	}
	return fmt.Sprintf("revision %d", st.Revision)
}
