package propagation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Reconciler syncs the federated resources of one type. A sync is a
// pipeline of stages, each with one owner: place (placer), render
// (package render, called by the apply stage for each cluster), apply
// (applier: the member writes), record (cpvStore: the
// ClusterPropagatedVersion) and report (reporter: the resource's status
// and Events).
type Reconciler struct {
	typ      Type
	client   client.Client
	reader   client.Reader // the host, not the cache
	notifier NamespaceNotifier
	opts     Options
	stopped  <-chan struct{} // closed when the controller has stopped
	// agent is set when the reconciler runs in a Pull cluster's agent.
	agent *agentSide
	// syncing holds back the watch events of a resource while it syncs;
	// enqueue syncs a resource again, for an event held back that was news.
	syncing syncing
	enqueue func(reconcile.Request)
	// waitingForDeps holds the resources whose first copy in a cluster
	// waits for their dependencies: a dependency's CPV write syncs them.
	waitingForDeps sync.Map // types.NamespacedName → struct{}

	place  *placer
	apply  *applier
	record *cpvStore
	report *reporter
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconcile syncs one federated resource to its clusters.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.syncing.begin(req.NamespacedName)
	defer func() {
		if r.syncing.end(req.NamespacedName) && r.enqueue != nil {
			r.enqueue(req)
		}
	}()
	fed := r.typ.newFederated()
	if err := r.client.Get(ctx, req.NamespacedName, fed); err != nil {
		if apierrors.IsNotFound(err) {
			r.report.drifted.forget(req.NamespacedName)
			fed.SetNamespace(req.Namespace)
			fed.SetName(req.Name)
			r.record.own.forget(r.record.key(fed))
			r.record.unsent.take(r.record.key(fed))
		}
		return reconcile.Result{}, ignoreNotFound(err)
	}
	if r.agent != nil {
		return r.reconcileAgent(ctx, fed)
	}
	if !fed.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, fed)
	}
	res, err := r.reconcileNormal(ctx, fed)
	if apierrors.IsConflict(err) {
		// A write guarded by a resourceVersion lost a race, most often
		// with this controller's own previous write, which the cache had
		// not shown yet: that is settled by syncing again from a cache
		// that has caught up, soon, and without the backoff of an error,
		// which grows with each race an object loses (when CPV entries of
		// Pull clusters or other replicas arrive one by one).
		ctrl.LoggerFrom(ctx).V(1).Info("Syncing again after a conflict", "error", err.Error())
		return reconcile.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

// conflictRetry is how soon a sync that lost a race is run again.
const conflictRetry = 100 * time.Millisecond

// syncState is what one sync has learned so far, stage by stage: the
// report stage writes it on every exit.
type syncState struct {
	fed      *unstructured.Unstructured
	spec     render.Spec
	set      clusterSet
	clusters []corev1beta1.FederatedCluster
	cpv      *typesv1beta1.ClusterPropagatedVersion
	// t and rsp are the place stage's decision.
	t   targets
	rsp *schedulingv1alpha1.ReplicaSchedulingPreference
	// in and results are the apply stage's input and what it found in
	// each cluster.
	in      *syncInput
	results []clusterResult
	// gone: the resource went away during the sync; nothing is reported.
	gone bool
	// rollout is the rollout stage's plan under spec.rollout Waves.
	rollout *rolloutPlan
	// deps are the dependencies stage's, and depsErr why a write of it
	// failed: the workload's own sync goes on, and the stage is retried.
	deps    []typesv1beta1.DependencyStatus
	depsErr error
	// depsWaiting are the clusters whose first copy waits for the
	// dependencies, with what it waits for.
	depsWaiting map[string]string
}

// reconcileNormal syncs fed: read, place, claim (the finalizer), rollout,
// record for agents, apply, record; the report stage is deferred, so that
// it runs on every exit and says what the sync learned, or why it stopped.
// It alone calls the stages (doc.go).
func (r *Reconciler) reconcileNormal(ctx context.Context, fed *unstructured.Unstructured) (res reconcile.Result, err error) {
	if reason, msg := OutOfReach(r.typ, fed); reason != "" {
		return reconcile.Result{}, r.report.refuse(ctx, fed, reason, msg)
	}
	s := &syncState{fed: fed}
	defer func() {
		if err = r.report.sync(ctx, s, err); err != nil {
			res = reconcile.Result{}
		}
	}()
	if err := r.read(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if s.t, s.rsp, err = r.place.schedule(ctx, fed, s.spec, s.cpv, s.clusters); err != nil {
		return reconcile.Result{}, err
	}
	if r.namespaceMoves(s) {
		// The resources in this namespace go where it goes.
		defer r.notifier.NamespaceChanged(fed.GetName())
	}
	if err := r.claim(ctx, s); err != nil || s.gone {
		return reconcile.Result{}, err
	}
	r.carryDependencies(ctx, s)
	if err := r.planRollout(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.recordForAgents(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.applyCopies(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.recordVersions(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	res = untilExpiry(r.requeue(s.results), s.spec, time.Now())
	if wait := r.dependenciesAgain(s); wait > 0 && (res.RequeueAfter == 0 || res.RequeueAfter > wait) {
		res.RequeueAfter = wait
	}
	if s.rollout != nil && s.rollout.Decision.Requeue > 0 && (res.RequeueAfter == 0 || s.rollout.Decision.Requeue < res.RequeueAfter) {
		res.RequeueAfter = s.rollout.Decision.Requeue
	}
	if fo := s.t.failover; fo != nil && fo.next > 0 && (res.RequeueAfter == 0 || fo.next < res.RequeueAfter) {
		res.RequeueAfter = fo.next // a toleration or failbackAfter ends
	}
	return res, nil
}

// read is the first stage of a sync: the resource's spec, the joined
// clusters and the resource's CPV. A spec that cannot be read stops the
// sync until the resource changes; the CPV of an earlier resource of its
// name, until the garbage collector has deleted it.
func (r *Reconciler) read(ctx context.Context, s *syncState) error {
	spec, err := render.ParseSpec(s.fed)
	if err != nil {
		return reconcile.TerminalError(err)
	}
	s.spec = spec
	if s.set, s.clusters, err = r.listClusters(ctx); err != nil {
		return err
	}
	if s.cpv, err = r.record.get(ctx, s.fed); err != nil {
		return err
	}
	if earlier := EarlierOwner(s.cpv, s.fed); earlier != nil {
		// Nothing is written for fed until the garbage collector has
		// deleted the CPV, whose deletion syncs fed.
		return fmt.Errorf("%w: nothing is written for this one until the garbage collector has deleted it "+
			"(it records the earlier resource's clusters, whose copies are not this one's to remove)", earlier)
	}
	return nil
}

// namespaceMoves tells whether s is the sync of a FederatedNamespace that
// places it elsewhere than its CPV records: the resources of the namespace
// are then synced again, to follow it.
func (r *Reconciler) namespaceMoves(s *syncState) bool {
	return r.typ.IsNamespace() && r.notifier != nil && (s.cpv.ResourceVersion == "" || !sameNames(clusterNames(s.cpv.Spec.Clusters), s.t.names))
}

// claim adds the sync finalizer. It lands before anything is written for
// the resource: a copy never exists without it, so that a crash between
// the first member write and the finalizer cannot leave copies that
// nothing would delete once the resource is
// (TestKilledThreeTimesDuringABulkCreate).
func (r *Reconciler) claim(ctx context.Context, s *syncState) error {
	err := r.addFinalizer(ctx, s.fed)
	if err == nil {
		return nil
	}
	if r.deleted(ctx, s.fed) {
		// Gone, or being deleted (no finalizer may be added then): nothing
		// was written for it.
		s.gone = true
		return nil
	}
	return fmt.Errorf("adding the finalizer: %w", err)
}

// recordForAgents is the record stage's placement, written before the
// apply stage when a Pull cluster is placed: its agent starts from the
// CPV. Otherwise the CPV is written after the members (recordVersions),
// so that a new resource reaches them after a single host write (the
// finalizer).
func (r *Reconciler) recordForAgents(ctx context.Context, s *syncState) (err error) {
	t := s.recordedTargets()
	if !placesPull(t.names, s.set) {
		return nil
	}
	s.cpv, err = r.record.ensure(ctx, s.fed, s.cpv, t, s.set, pullPlanOf(s))
	return err
}

// applyCopies is the apply stage: it makes the copies in the placed
// clusters current and removes those of clusters the resource left. A CPV
// that does not exist yet has no versions, and the first are 1.
func (r *Reconciler) applyCopies(ctx context.Context, s *syncState) error {
	s.in = newSyncInput(s.fed, s.spec, s.cpv, s.t)
	s.in.joined = s.set
	s.in.keptByNamespace = s.t.keptByNamespace
	s.in.waiting = s.depsWaiting
	if err := s.rollout.heldInputs(s, s.in); err != nil {
		return err
	}
	results := r.apply.syncAll(ctx, s.in, s.t.names, s.set)
	results, s.t = dropGone(results, s.t)
	s.results = append(results, r.apply.removeUnplaced(ctx, s.fed, s.t.names, s.cpv, s.set)...)
	return nil
}

// recordVersions is the record stage: the CPV's placement, then its
// status, with what the apply stage found.
func (r *Reconciler) recordVersions(ctx context.Context, s *syncState) (err error) {
	if s.cpv, err = r.record.ensure(ctx, s.fed, s.cpv, s.recordedTargets(), s.set, pullPlanOf(s)); err != nil {
		return err
	}
	return r.record.writeStatus(ctx, s.cpv, s.in, s.t, s.results, s.fed.GetGeneration())
}

// requeue is when a synced resource is looked at again: soon when a
// cluster's failure may go away by itself, else at the next resync.
func (r *Reconciler) requeue(results []clusterResult) reconcile.Result {
	if slices.ContainsFunc(results, func(res clusterResult) bool { return res.retry }) {
		return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}
	}
	return reconcile.Result{RequeueAfter: jittered(r.opts.ResyncPeriod)}
}

// untilExpiry brings res forward to just after the next expiry of one of
// spec's drift waivers, so that the policy applies again at once when the
// waiver ends.
func untilExpiry(res reconcile.Result, spec render.Spec, now time.Time) reconcile.Result {
	next := drift.NextExpiry(spec.DriftPolicy, now)
	if next.IsZero() {
		return res
	}
	after := next.Sub(now) + 100*time.Millisecond
	if res.RequeueAfter == 0 || after < res.RequeueAfter {
		res.RequeueAfter = after
	}
	return res
}

// addFinalizer adds the sync finalizer to fed, if it lacks it.
func (r *Reconciler) addFinalizer(ctx context.Context, fed *unstructured.Unstructured) error {
	if controllerutil.ContainsFinalizer(fed, typesv1beta1.FinalizerSync) {
		return nil
	}
	obj := fed.DeepCopy()
	before := obj.DeepCopy()
	controllerutil.AddFinalizer(obj, typesv1beta1.FinalizerSync)
	// The finalizer list is replaced as a whole: fail rather than drop a
	// finalizer someone added since the cache was filled.
	if err := r.client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return err
	}
	// The sync goes on with the resource as written: its status write is
	// guarded by this resourceVersion.
	fed.SetFinalizers(obj.GetFinalizers())
	fed.SetResourceVersion(obj.GetResourceVersion())
	return nil
}

// deleted tells, reading the host rather than the cache, whether fed is
// gone or being deleted.
func (r *Reconciler) deleted(ctx context.Context, fed *unstructured.Unstructured) bool {
	live := r.typ.newFederated()
	err := r.reader.Get(ctx, client.ObjectKeyFromObject(fed), live)
	return apierrors.IsNotFound(err) || (err == nil && !live.GetDeletionTimestamp().IsZero())
}

// clusterSet is the joined clusters by name.
type clusterSet map[string]*corev1beta1.FederatedCluster

func (r *Reconciler) listClusters(ctx context.Context) (clusterSet, []corev1beta1.FederatedCluster, error) {
	var list corev1beta1.FederatedClusterList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, nil, fmt.Errorf("listing FederatedClusters: %w", err)
	}
	set := clusterSet{}
	for i := range list.Items {
		set[list.Items[i].Name] = &list.Items[i]
	}
	return r.shardView(set), list.Items, nil
}

// jittered spreads periodic resyncs over a tenth of the period, so that
// resources created together are not all synced again at once; 0 stays 0.
func jittered(period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	return period + time.Duration(rand.Int64N(int64(period)/10+1))
}

// dropGone takes out of results and t the clusters whose sync found that a
// copy kept only by the namespace restriction is gone (deleted with its
// namespace, say): there is nothing left to keep, and a new copy there
// would be a new placement, which the restriction forbids. Their CPV
// entries then go, and the Scheduled condition says they are ruled out.
func dropGone(results []clusterResult, t targets) ([]clusterResult, targets) {
	gone := map[string]bool{}
	for _, res := range results {
		if res.gone {
			gone[res.name] = true
		}
	}
	if len(gone) == 0 {
		return results, t
	}
	results = slices.DeleteFunc(slices.Clone(results), func(res clusterResult) bool { return gone[res.name] })
	t.names = slices.DeleteFunc(slices.Clone(t.names), func(name string) bool { return gone[name] })
	replicas := map[string]int32{}
	for name, n := range t.replicas {
		if !gone[name] {
			replicas[name] = n
		}
	}
	t.replicas = replicas
	t.decision = withoutClusters(t.decision, gone, "its copy is gone, and the restriction places no new one")
	return results, t
}
