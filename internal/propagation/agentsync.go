package propagation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/rollout"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
)

// agentSide is what a Reconciler running in a Pull cluster's agent knows:
// its cluster, the clients of that cluster, and the field manager of its
// CPV entries. The agent syncs with the same code as the host (syncCluster,
// drift detection, remediation), for one cluster, and writes only its own
// entry of each CPV.
type agentSide struct {
	cluster      string
	member       *clustercache.Member
	fieldManager string
	// host reads the agent's own FederatedCluster (its labels) from the
	// API server, not a cache: its rights name that one object. own keeps
	// what it read.
	host client.Reader
	own  *ownLabels
}

// reconcileAgent does with fed what the host tells the agent's cluster
// (agentActionFor): sync it when its CPV places it there; delete the copy
// and the agent's entry when the CPV's spec.removals names the cluster or
// fed is deleted; otherwise, notably when the CPV is missing from the
// agent's cache, nothing.
func (r *Reconciler) reconcileAgent(ctx context.Context, fed *unstructured.Unstructured) (reconcile.Result, error) {
	if shard := r.opts.Shard; shard != nil {
		release, ok := shard.Acquire(r.agent.cluster)
		if !ok {
			// Another replica serves the cluster now, and this run stops
			// soon; or this replica's Lease renewal is late, and it
			// serves the cluster again once renewed: look again then.
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		defer release()
	}
	// The agent's cache holds only the CPVs labelled for its cluster.
	cpv, err := r.record.get(ctx, fed)
	if err != nil {
		return reconcile.Result{}, err
	}
	switch agentActionFor(fed, cpv, r.agent.cluster) {
	case agentSync:
		return r.agentSync(ctx, fed, cpv)
	case agentDelete:
		return reconcile.Result{}, r.agentRemove(ctx, fed, cpv, true)
	case agentRelease:
		return reconcile.Result{}, r.agentRemove(ctx, fed, cpv, false)
	}
	ctrl.LoggerFrom(ctx).V(1).Info("No ClusterPropagatedVersion places the resource on this cluster or tells it to remove its copy; keeping any copy as it is",
		"cpv", r.record.key(fed))
	return reconcile.Result{}, nil
}

// agentSync syncs fed, which cpv places on the agent's cluster, to that
// cluster and writes the agent's entry of cpv. Its report is deferred
// (agentReport), so that a sync that stops on an error no retry fixes says
// why in that entry.
func (r *Reconciler) agentSync(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) (result reconcile.Result, err error) {
	spec, err := render.ParseSpec(fed)
	if err != nil {
		// The host reads the same spec, and its report says why (read).
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	in := newSyncInput(fed, spec, cpv, targetsOf(cpv))
	var target typesv1beta1.Revision
	defer func() {
		if err = r.agentReport(ctx, cpv, in, target, err); err != nil {
			result = reconcile.Result{}
		}
	}()
	if why := placementDisagrees(spec.Placement, r.agent.cluster); why != "" {
		return r.agentRefuse(ctx, cpv, in, why)
	}
	prev, recorded := in.previous[r.agent.cluster]
	// Without an entry (a first sync, or a CPV rebuilt) no resync was acted
	// on: the copy is compared, not re-applied.
	in.force = recorded && in.resync != "" && in.resync != prev.Resync
	rev, err := pullRevisionOf(fed, spec, cpv, r.agent.cluster)
	if err != nil {
		// The host has not decided yet which revision of this content the
		// cluster is to have: nothing is written until it has (its CPV
		// write calls for a sync). The host reports the cluster
		// WaitingForAgent meanwhile.
		ctrl.LoggerFrom(ctx).V(1).Info("Waiting for the host's rollout decision", "reason", err.Error())
		return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, nil
	}
	target = rev.number
	if rev.held != nil {
		if why := heldDisagrees(*rev.held); why != "" {
			return r.agentRefuse(ctx, cpv, in, why)
		}
		held, err := heldInput(in, cpv, *rev.held)
		if err != nil {
			return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("reading revision %d in the ClusterPropagatedVersion's spec.rollout.held: %w", rev.number, err))
		}
		in = held
	}
	res := r.apply.judge(r.apply.syncCluster(ctx, in, r.agent.cluster, nil))
	res.target = rev.number
	if rev.held != nil {
		res.held = &in.v
	}
	r.report.recordDrift(fed, in, []clusterResult{res})
	r.report.drifted.set(client.ObjectKeyFromObject(fed), []clusterResult{res})
	if err := r.record.writeAgentResult(ctx, cpv, in, res); err != nil {
		return reconcile.Result{}, err
	}
	if res.retry {
		return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, nil
	}
	return untilExpiry(reconcile.Result{RequeueAfter: jittered(r.opts.ResyncPeriod)}, spec, time.Now()), nil
}

// agentRefuse records in the agent's entry of cpv that what cpv tells the
// agent to apply disagrees with fed (why says how): nothing is written to
// the cluster until one of them changes.
func (r *Reconciler) agentRefuse(ctx context.Context, cpv *typesv1beta1.ClusterPropagatedVersion, in *syncInput, why string) (reconcile.Result, error) {
	res := clusterResult{name: r.agent.cluster, reason: typesv1beta1.ClusterCPVMismatch, state: typesv1beta1.ApplyFailed,
		message: fmt.Sprintf("%s: %s; nothing is written to cluster %s", typesv1beta1.ClusterCPVMismatch, why, r.agent.cluster)}
	if err := r.record.writeAgentResult(ctx, cpv, in, res); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: jittered(r.opts.ResyncPeriod)}, nil
}

// agentReport is the report stage of an agent's sync, deferred by
// agentSync: a sync that stopped on err writes, in the agent's entry of
// cpv, what agentStopped says of it. It only describes: nothing is written
// to the cluster. It returns err, with the error of its own write if any.
func (r *Reconciler) agentReport(ctx context.Context, cpv *typesv1beta1.ClusterPropagatedVersion, in *syncInput, target typesv1beta1.Revision, err error) error {
	res, ok := agentStopped(r.agent.cluster, target, err)
	if !ok {
		return err
	}
	res = scrubbed(res, r.apply.scrubberOf(in.fed))
	if werr := r.record.writeAgentResult(ctx, cpv, in, res); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// agentStopped is the outcome the agent's entry records for a sync of
// cluster, toward revision target, that stopped on err: ApplyFailed with
// err as its message when err is terminal, for then the agent waits until
// the resource or its CPV changes. It is false for nil and for any other
// error: that one is retried at once, and is most often the write of the
// entry itself, which the entry cannot report.
func agentStopped(cluster string, target typesv1beta1.Revision, err error) (clusterResult, bool) {
	if err == nil || !errors.Is(err, reconcile.TerminalError(nil)) {
		return clusterResult{}, false
	}
	if inner := errors.Unwrap(err); inner != nil {
		err = inner
	}
	res := applyFailed(cluster, err, false)
	res.message = fmt.Sprintf("not synced: %v; nothing is written to cluster %s until the resource or its ClusterPropagatedVersion changes", err, cluster)
	res.target = target
	return res, true
}

// placementDisagrees says why the resource's placement p does not place
// it on cluster, which its CPV places it on, or "" when it may: when p
// names clusters (spec.placement.clusters) and not this one, or excludes
// it by name. A clusterSelector is not checked: an agent does not read the
// FederatedClusters' labels.
func placementDisagrees(p typesv1beta1.Placement, cluster string) string {
	byName := typesv1beta1.Placement{Clusters: p.Clusters, ExcludeClusters: p.ExcludeClusters}
	if byName.Clusters == nil {
		byName.ClusterSelector = &typesv1beta1.ClusterSelector{} // any cluster: its labels are not known here
	}
	if ok, why, err := clusteraffinity.Selects(byName, cluster, nil); !ok && err == nil {
		return fmt.Sprintf("the ClusterPropagatedVersion places the resource on this cluster, but the resource's placement does not (%s)", why)
	}
	return ""
}

// pullRevision is the revision a Pull cluster's agent applies: the
// latest (the resource's content) or an earlier one the host holds it at.
type pullRevision struct {
	// number is the revision's under a rollout in waves; 0 otherwise.
	number typesv1beta1.Revision
	// held is the earlier revision's content; nil for the latest.
	held *typesv1beta1.HeldRevision
}

// pullRevisionOf is the revision cluster is to apply. Under strategy All
// it is the latest. Under Waves it is the one the host named in the CPV
// (spec.clusters[].revision): the latest only while the resource still has
// the content the host decided about (spec.rollout.latest), else an
// earlier one whose content is in spec.rollout.held. An error says why the
// agent waits for the host instead: a new content the host has not yet
// decided about is never applied ahead of its wave.
func pullRevisionOf(fed *unstructured.Unstructured, spec render.Spec, cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) (pullRevision, error) {
	if spec.Rollout == nil || spec.Rollout.Strategy != typesv1beta1.RolloutWaves {
		return pullRevision{}, nil
	}
	pr := cpv.Spec.Rollout
	i := slices.IndexFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == cluster })
	if pr == nil || i < 0 || cpv.Spec.Clusters[i].Revision == nil {
		return pullRevision{}, errors.New("the ClusterPropagatedVersion names no revision for this cluster yet")
	}
	n := *cpv.Spec.Clusters[i].Revision
	if n == pr.Latest.Number {
		if !rollout.Names(pr.Latest, rollout.KeyOf(fed)) {
			return pullRevision{}, fmt.Errorf("the resource's content changed since the host decided on revision %d", n)
		}
		return pullRevision{number: n}, nil
	}
	j := slices.IndexFunc(pr.Held, func(h typesv1beta1.HeldRevision) bool { return h.Number == n })
	if j < 0 {
		return pullRevision{}, fmt.Errorf("revision %d is neither the latest nor held in the ClusterPropagatedVersion", n)
	}
	return pullRevision{number: n, held: &pr.Held[j]}, nil
}

// heldDisagrees says why the content of h, an earlier revision the CPV
// holds the cluster at, is not the one its key names, or "" when it is
// (rollout.HeldMatches). Content that cannot be read is heldInput's error.
func heldDisagrees(h typesv1beta1.HeldRevision) string {
	rev, err := rollout.FromHeld(h)
	if err != nil || rollout.HeldMatches(h, rev) {
		return ""
	}
	return fmt.Sprintf("the content of revision %d in the ClusterPropagatedVersion's spec.rollout.held does not have the key recorded for it there", h.Number)
}

// heldInput is in made for the earlier revision h: its content and
// versions, with in's resync.
func heldInput(in *syncInput, cpv *typesv1beta1.ClusterPropagatedVersion, h typesv1beta1.HeldRevision) (*syncInput, error) {
	rev, err := rollout.FromHeld(h)
	if err != nil {
		return nil, err
	}
	out, err := revisionInput(in.fed, rev, cpv, targetsOf(cpv))
	if err != nil {
		return nil, err
	}
	out.resync, out.force = in.resync, in.force
	return out, nil
}

// targetsOf is the scheduler's decision as the CPV records it.
func targetsOf(cpv *typesv1beta1.ClusterPropagatedVersion) targets {
	t := targets{replicas: map[string]int32{}}
	for _, pc := range cpv.Spec.Clusters {
		t.names = append(t.names, string(pc.Name))
		if pc.Replicas != nil {
			t.replicas[string(pc.Name)] = *pc.Replicas
		}
	}
	return t
}

// agentRemove deletes the agent's copy of fed when deleteCopy is set and
// the copy is fed's own (ownCopy), then the agent's entry of its CPV,
// which lets the host finish the removal. The
// entry is read from cpv, the CPV in the agent's cache, which the host
// keeps labelled for the cluster while the removal is pending. When the CPV
// is not there (fed is deleted, and its CPV may be gone or never placed it
// here), an entry is removed only where there was a copy: an apply that
// finds nothing of the agent's writes nothing, but costs a request.
func (r *Reconciler) agentRemove(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, deleteCopy bool) error {
	name := r.agent.cluster
	had, err := r.apply.hasManagedCopy(ctx, fed)
	if err != nil {
		return err
	}
	if had && deleteCopy {
		if done, failed := r.apply.deleteCopy(ctx, fed, cpv, name, nil); !done {
			return fmt.Errorf("deleting the copy of %s %s: %s", r.typ.Federated.Kind, client.ObjectKeyFromObject(fed), failed.message)
		}
	}
	r.report.drifted.forget(client.ObjectKeyFromObject(fed))
	r.record.unsent.take(r.record.key(fed))
	_, recorded := entryOf(cpv, name)
	if !recorded && (cpv.ResourceVersion != "" || !had) {
		return nil // nothing reported: nothing to write
	}
	if EarlierOwner(cpv, fed) != nil {
		return nil // an earlier resource's record, not fed's to change
	}
	err = r.record.writeAgentEntry(ctx, r.record.key(fed), nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// hasManagedCopy tells whether the agent's cluster holds a managed copy of
// fed, as its informer sees it.
func (a *applier) hasManagedCopy(ctx context.Context, fed *unstructured.Unstructured) (bool, error) {
	lister, err := a.watches.lister(ctx, a.agent.member)
	if apierrors.IsNotFound(err) {
		return false, nil // the cluster does not serve the kind
	}
	if err != nil {
		return false, err
	}
	key := fed.GetName()
	if a.typ.TargetNamespaced && fed.GetNamespace() != "" {
		key = fed.GetNamespace() + "/" + key
	}
	_, err = lister.Get(key)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// entryOf returns cluster's entry of cpv's status.
func entryOf(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) (typesv1beta1.ClusterVersion, bool) {
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			return cv, true
		}
	}
	return typesv1beta1.ClusterVersion{}, false
}
