package propagation

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// Reconciler syncs the federated resources of one type.
type Reconciler struct {
	typ        Type
	client     client.Client
	reader     client.Reader // the host, not the cache
	clusters   *clustercache.Cache
	watches    *memberWatches
	namespaces Namespaces
	notifier   NamespaceNotifier
	opts       Options
	recorder   recorder.EventRecorder
	written    lastWrites
	drifted    *driftGauge
	now        func() time.Time
	stopped    <-chan struct{} // closed when the controller has stopped
	// agent is set when the reconciler runs in a Pull cluster's agent.
	agent *agentSide
	// ownWrites are the resourceVersions of the CPVs this reconciler
	// wrote last, so that their watch events do not trigger a sync.
	ownWrites ownWrites
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// Reconcile syncs one federated resource to its clusters.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fed := r.typ.newFederated()
	if err := r.client.Get(ctx, req.NamespacedName, fed); err != nil {
		if apierrors.IsNotFound(err) {
			r.drifted.forget(req.NamespacedName)
			fed.SetNamespace(req.Namespace)
			fed.SetName(req.Name)
			r.ownWrites.forget(r.cpvKey(fed))
		}
		return reconcile.Result{}, ignoreNotFound(err)
	}
	if r.agent != nil {
		return r.reconcileAgent(ctx, fed)
	}
	if !fed.GetDeletionTimestamp().IsZero() {
		return r.reconcileDelete(ctx, fed)
	}
	return r.reconcileNormal(ctx, fed)
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
	return r.client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
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
	return set, list.Items, nil
}

func (r *Reconciler) reconcileNormal(ctx context.Context, fed *unstructured.Unstructured) (reconcile.Result, error) {
	if reason, msg := outOfReach(r.typ, fed); reason != "" {
		return reconcile.Result{}, r.refuse(ctx, fed, reason, msg)
	}
	spec, err := parseSpec(fed)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	set, list, err := r.listClusters(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	cpv, err := r.getCPV(ctx, fed)
	if err != nil {
		return reconcile.Result{}, err
	}
	t, rsp, err := r.schedule(ctx, fed, spec, cpv, list)
	if err != nil {
		return reconcile.Result{}, err
	}
	// The finalizer lands before anything is written for the resource: a
	// copy never exists without it, so that a crash between the first
	// member write and the finalizer cannot leave copies that nothing would
	// delete once the resource is (TestKilledThreeTimesDuringABulkCreate).
	if err := r.addFinalizer(ctx, fed); err != nil {
		if r.deleted(ctx, fed) {
			// Gone, or being deleted (no finalizer may be added then):
			// nothing was written for it.
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
	}
	// The members are written before the CPV is created or updated, so that
	// a new resource reaches them after a single host write (the finalizer);
	// a CPV that does not exist yet has no versions, and the first are 1.
	if placesPull(t.names, set) {
		// A Pull cluster's agent starts from the CPV: write it first.
		if cpv, err = r.ensureCPV(ctx, fed, cpv, t, set); err != nil {
			return reconcile.Result{}, err
		}
	}
	in := newSyncInput(fed, spec, cpv, t)
	in.joined = set
	in.keptByNamespace = t.keptByNamespace
	results := r.syncAll(ctx, in, t.names, set)
	results, t = dropGone(results, t)
	results = append(results, r.removeUnplaced(ctx, fed, t.names, cpv, set)...)
	if cpv, err = r.ensureCPV(ctx, fed, cpv, t, set); err != nil {
		return reconcile.Result{}, err
	}
	r.recordDecision(fed, t)
	r.recordDrift(fed, in, results)
	r.recordFailures(fed, in, results)
	r.drifted.set(client.ObjectKeyFromObject(fed), results)
	return r.writeStatuses(ctx, fed, cpv, rsp, in, t, results)
}

// writeStatuses writes what the sync found in the CPV, the federated
// resource and its ReplicaSchedulingPreference.
func (r *Reconciler) writeStatuses(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, rsp *schedulingv1alpha1.ReplicaSchedulingPreference, in *syncInput, t targets, results []clusterResult) (reconcile.Result, error) {
	if err := r.writeCPVStatus(ctx, cpv, in, len(t.names), results, fed.GetGeneration()); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.writeFederatedStatus(ctx, fed, t, results); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.writePreferenceStatus(ctx, rsp, t); err != nil {
		return reconcile.Result{}, err
	}
	if slices.ContainsFunc(results, func(res clusterResult) bool { return res.retry }) {
		return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: jittered(r.opts.ResyncPeriod)}, nil
}

// jittered spreads periodic resyncs over a tenth of the period, so that
// resources created together are not all synced again at once; 0 stays 0.
func jittered(period time.Duration) time.Duration {
	if period <= 0 {
		return 0
	}
	return period + time.Duration(rand.Int64N(int64(period)/10+1))
}

// syncInput is what every cluster's sync of one resource shares.
type syncInput struct {
	fed  *unstructured.Unstructured
	spec federated
	v    versions
	// replicas are the scheduler's, by cluster, when it divides them.
	replicas map[string]int32
	// previous are the CPV's entries before this sync, by cluster.
	previous map[string]typesv1beta1.ClusterVersion
	// joined are the FederatedClusters when the sync started.
	joined clusterSet
	// keptByNamespace are the clusters placed only to keep a copy that
	// exists: where it does not, none is written (see dropGone).
	keptByNamespace map[string]bool
	// resync is the kubefed.io/resync annotation; force is set when its
	// value is new: every placed cluster is written.
	resync string
	force  bool
}

func newSyncInput(fed *unstructured.Unstructured, spec federated, cpv *typesv1beta1.ClusterPropagatedVersion, t targets) *syncInput {
	in := &syncInput{fed: fed, spec: spec, replicas: t.replicas, previous: map[string]typesv1beta1.ClusterVersion{}}
	in.v = nextVersions(cpv.Status, contentHash(template(fed)), overridesHash(spec.Overrides, t.replicas))
	for _, cv := range cpv.Status.ClusterVersions {
		in.previous[string(cv.ClusterName)] = cv
	}
	in.resync = fed.GetAnnotations()[typesv1beta1.AnnotationResync]
	// A missing CPV (deleted, or not created yet) knows of no resync acted
	// on: the copies are compared, not re-applied.
	in.force = in.resync != "" && cpv.ResourceVersion != "" && in.resync != cpv.Status.Resync
	return in
}

// syncAll syncs the placed clusters in parallel.
func (r *Reconciler) syncAll(ctx context.Context, in *syncInput, placed []string, set clusterSet) []clusterResult {
	results := make([]clusterResult, len(placed))
	var wg sync.WaitGroup
	for i, name := range placed {
		if fc := set[name]; isPull(fc) && r.agent == nil {
			prev, recorded := in.previous[name]
			results[i] = reportedByAgent(name, fc, prev, recorded, in.v)
			continue
		}
		wg.Go(func() { results[i] = r.syncCluster(ctx, in, name, set[name]) })
	}
	wg.Wait()
	return results
}

// removeUnplaced deletes the copies in clusters the resource left; those
// that cannot be deleted yet are returned, to stay in the CPV.
func (r *Reconciler) removeUnplaced(ctx context.Context, fed *unstructured.Unstructured, placed []string, cpv *typesv1beta1.ClusterPropagatedVersion, set clusterSet) []clusterResult {
	var pending []clusterResult
	for _, cv := range cpv.Status.ClusterVersions {
		name := string(cv.ClusterName)
		if slices.Contains(placed, name) {
			continue
		}
		if isPull(set[name]) {
			// The CPV tells its agent to delete the copy (spec.removals);
			// the agent does, then removes its entry.
			pending = append(pending, clusterResult{name: name, reason: typesv1beta1.ClusterWaitingForAgent, state: cv.State, fromAgent: true, entry: &cv, pending: true,
				message: fmt.Sprintf("removal pending: waiting for the agent of Pull cluster %s to delete its copy, as spec.removals of the ClusterPropagatedVersion tells it", name)})
			continue
		}
		if done, failed := r.deleteCopy(ctx, fed, name, set[name]); !done {
			pending = append(pending, *failed)
		}
	}
	return pending
}

// reconcileDelete deletes every member copy, unless the resource is
// annotated to orphan them, then lets the resource go.
func (r *Reconciler) reconcileDelete(ctx context.Context, fed *unstructured.Unstructured) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(fed, typesv1beta1.FinalizerSync) {
		return reconcile.Result{}, nil
	}
	// A resource that was never synced (see outOfReach) has no copy of its
	// own to delete.
	refused, _ := outOfReach(r.typ, fed)
	if fed.GetAnnotations()[typesv1beta1.AnnotationOrphan] != "true" && refused == "" {
		pending, err := r.deleteAllCopies(ctx, fed)
		if err != nil {
			return reconcile.Result{}, err
		}
		if len(pending) > 0 {
			// Not an error: the deletion waits, and the status says for what.
			return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, r.writeDeletionPending(ctx, fed, pending)
		}
	}
	if r.typ.IsNamespace() && r.notifier != nil {
		r.notifier.NamespaceChanged(fed.GetName())
	}
	before := fed.DeepCopy()
	controllerutil.RemoveFinalizer(fed, typesv1beta1.FinalizerSync)
	if err := r.client.Patch(ctx, fed, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, ignoreNotFound(fmt.Errorf("removing the finalizer: %w", err))
	}
	return reconcile.Result{}, nil
}

// writeDeletionPending sets the Propagated condition of a resource being
// deleted to say which clusters its deletion waits for.
func (r *Reconciler) writeDeletionPending(ctx context.Context, fed *unstructured.Unstructured, pending []string) error {
	old := federatedStatusOf(fed)
	next := *old.DeepCopy()
	setCondition(&next.Conditions, typesv1beta1.FederatedPropagated, false, typesv1beta1.ReasonDeletionPending,
		fmt.Sprintf("deleting: waiting for the copies in clusters %s to be deleted: they cannot be reached, or their agents (Pull) have not deleted them yet; "+
			"they are deleted when the clusters are Ready again, or unjoin them", strings.Join(pending, ", ")),
		fed.GetGeneration(), metav1.NewTime(r.now()))
	return r.patchFederatedStatus(ctx, fed, old, next)
}

// deleteAllCopies deletes the copies in every cluster the CPV records or
// the placement names, and returns the clusters that could not be reached.
func (r *Reconciler) deleteAllCopies(ctx context.Context, fed *unstructured.Unstructured) ([]string, error) {
	set, list, err := r.listClusters(ctx)
	if err != nil {
		return nil, err
	}
	names := []string{}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := r.client.Get(ctx, r.cpvKey(fed), cpv); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the ClusterPropagatedVersion: %w", err)
	}
	// A cluster whose CPV entry records no copy written there, and where the
	// copies cannot be listed (a kind it does not serve, or no right to),
	// holds nothing to delete; every other cluster is checked.
	known := map[string]bool{}
	for _, cv := range cpv.Status.ClusterVersions {
		names = append(names, string(cv.ClusterName))
		known[string(cv.ClusterName)] = cv.Version != ""
	}
	for _, pc := range cpv.Spec.Clusters {
		if _, ok := known[string(pc.Name)]; !ok {
			names = append(names, string(pc.Name))
			known[string(pc.Name)] = true // scheduled: it may hold one
		}
	}
	if spec, err := parseSpec(fed); err == nil {
		if placed, err := place(spec.Placement, list); err == nil {
			for _, name := range placed {
				if _, ok := known[name]; !ok {
					names = append(names, name)
					known[name] = true // not recorded: it may hold one
				}
			}
		}
	}
	slices.Sort(names)
	var pending []string
	reported := map[string]bool{}
	for _, cv := range cpv.Status.ClusterVersions {
		reported[string(cv.ClusterName)] = true
	}
	for _, name := range slices.Compact(names) {
		if isPull(set[name]) {
			// Its agent deletes the copy, then its entry.
			if reported[name] {
				pending = append(pending, name)
			}
			continue
		}
		done, failed := r.deleteCopy(ctx, fed, name, set[name])
		nothingThere := !known[name] && failed != nil && failed.listFailed
		if !done && !nothingThere {
			pending = append(pending, name)
		}
	}
	return pending, nil
}

func (r *Reconciler) cpvKey(fed *unstructured.Unstructured) types.NamespacedName {
	ns := fed.GetNamespace()
	if ns == "" {
		ns = r.opts.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: r.typ.CPVName(fed.GetName())}
}

// getCPV returns the resource's ClusterPropagatedVersion, or an empty one
// without a resourceVersion when it does not exist yet.
func (r *Reconciler) getCPV(ctx context.Context, fed *unstructured.Unstructured) (*typesv1beta1.ClusterPropagatedVersion, error) {
	key := r.cpvKey(fed)
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	err := r.client.Get(ctx, key, cpv)
	if apierrors.IsNotFound(err) {
		return &typesv1beta1.ClusterPropagatedVersion{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading ClusterPropagatedVersion %s: %w", key, err)
	}
	return cpv, nil
}

// ensureCPV creates the resource's ClusterPropagatedVersion when cpv does
// not exist yet, or updates its spec and labels when they differ from fed,
// the placement and the removals still pending in Pull clusters (set is
// the joined clusters).
func (r *Reconciler) ensureCPV(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, t targets, set clusterSet) (*typesv1beta1.ClusterPropagatedVersion, error) {
	key := r.cpvKey(fed)
	removals := pullRemovals(cpv, t.names, set)
	want := typesv1beta1.ClusterPropagatedVersionSpec{
		Template:           fed.GetName(),
		TemplateKind:       r.typ.Federated.Kind,
		TemplateAPIVersion: r.typ.Federated.GroupVersion().String(),
		TemplateResource:   r.typ.FederatedResource,
		Clusters:           normalized(t.placedClusters()),
		Removals:           removals,
		Spread:             t.spread,
	}
	placed := t.names
	owner := metav1.OwnerReference{
		APIVersion: r.typ.Federated.GroupVersion().String(), Kind: r.typ.Federated.Kind,
		Name: fed.GetName(), UID: fed.GetUID(), Controller: new(true),
	}
	if r.typ.IsNamespace() && r.notifier != nil && (cpv.ResourceVersion == "" || !sameNames(clusterNames(cpv.Spec.Clusters), placed)) {
		// The resources in this namespace go where it goes.
		defer r.notifier.NamespaceChanged(fed.GetName())
	}
	if cpv.ResourceVersion == "" {
		cpv = &typesv1beta1.ClusterPropagatedVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, OwnerReferences: []metav1.OwnerReference{owner}, Labels: placedLabels(nil, labelled(placed, removals))},
			Spec:       want,
		}
		if err := r.client.Create(ctx, cpv); err != nil {
			return nil, fmt.Errorf("creating ClusterPropagatedVersion %s: %w", key, err)
		}
		r.ownWrites.record(cpv)
		return cpv, nil
	}
	labels := placedLabels(cpv.Labels, labelled(placed, removals))
	if equality.Semantic.DeepEqual(cpv.Spec, want) && equality.Semantic.DeepEqual(cpv.OwnerReferences, []metav1.OwnerReference{owner}) && maps.Equal(cpv.Labels, labels) {
		return cpv, nil
	}
	before := cpv.DeepCopy()
	cpv.Spec = want
	cpv.OwnerReferences = []metav1.OwnerReference{owner}
	cpv.Labels = labels
	if err := r.client.Patch(ctx, cpv, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("updating ClusterPropagatedVersion %s: %w", key, err)
	}
	r.ownWrites.record(cpv)
	return cpv, nil
}

// placedLabels returns labels with one placed.fedwarden.io/<cluster> label
// per cluster of placed, and none for the others: a Pull cluster's agent
// watches only the CPVs labelled with its name.
func placedLabels(labels map[string]string, placed []string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if !strings.HasPrefix(k, typesv1beta1.LabelPlacedPrefix) {
			out[k] = v
		}
	}
	for _, name := range placed {
		out[typesv1beta1.LabelPlacedPrefix+name] = ""
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func clusterNames(cs []typesv1beta1.PlacedCluster) []string {
	names := make([]string, 0, len(cs))
	for _, c := range cs {
		names = append(names, string(c.Name))
	}
	return names
}

// writeCPVStatus writes the CPV status when it changed: the host applies
// everything but the entries of Pull clusters, which their agents apply.
func (r *Reconciler) writeCPVStatus(ctx context.Context, cpv *typesv1beta1.ClusterPropagatedVersion, in *syncInput, placed int, results []clusterResult, generation int64) error {
	next := cpvStatus(cpv.Status, in.v, placed, results, generation, metav1.NewTime(r.now()))
	next.Resync = cpv.Status.Resync
	if in.resync != "" {
		next.Resync = in.resync
	}
	// The API server keeps the entries in the order their managers applied
	// them, not sorted.
	current := cpv.Status.DeepCopy()
	slices.SortFunc(current.ClusterVersions, func(a, b typesv1beta1.ClusterVersion) int {
		return strings.Compare(string(a.ClusterName), string(b.ClusterName))
	})
	if equality.Semantic.DeepEqual(*current, next) {
		return nil
	}
	agents := map[string]bool{}
	for _, res := range results {
		if res.fromAgent {
			agents[res.name] = true
		}
	}
	own := next.DeepCopy()
	own.ClusterVersions = slices.DeleteFunc(own.ClusterVersions, func(cv typesv1beta1.ClusterVersion) bool { return agents[string(cv.ClusterName)] })
	applied, err := applyCPVStatus(ctx, r.client, client.ObjectKeyFromObject(cpv), own, FieldManager)
	if err != nil {
		return fmt.Errorf("writing the status of ClusterPropagatedVersion %s: %w", client.ObjectKeyFromObject(cpv), err)
	}
	r.ownWrites.record(applied)
	if err := r.removeLeftEntries(ctx, applied, in.joined); err != nil {
		return err
	}
	cpv.Status = next
	return nil
}

// writeFederatedStatus writes the federated resource's status when it
// changed.
func (r *Reconciler) writeFederatedStatus(ctx context.Context, fed *unstructured.Unstructured, t targets, results []clusterResult) error {
	old := federatedStatusOf(fed)
	next := federatedStatus(old, r.typ, t, results, fed.GetGeneration(), metav1.NewTime(r.now()))
	return r.patchFederatedStatus(ctx, fed, old, next)
}

// federatedStatusOf reads a federated resource's status.
func federatedStatusOf(fed *unstructured.Unstructured) typesv1beta1.FederatedStatus {
	var st typesv1beta1.FederatedStatus
	if raw, found, _ := unstructured.NestedMap(fed.Object, "status"); found {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	return st
}

// patchFederatedStatus writes next as fed's status when it differs from old.
func (r *Reconciler) patchFederatedStatus(ctx context.Context, fed *unstructured.Unstructured, old, next typesv1beta1.FederatedStatus) error {
	if equality.Semantic.DeepEqual(old, next) {
		return nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	before := fed.DeepCopy()
	fed.Object["status"] = raw
	if err := r.client.Status().Patch(ctx, fed, client.MergeFrom(before)); err != nil {
		return ignoreNotFound(fmt.Errorf("writing the status of %s %s: %w", r.typ.Federated.Kind, client.ObjectKeyFromObject(fed), err))
	}
	return nil
}
