package clusterhealth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// ControllerName names the controller in logs, metrics and Events.
const ControllerName = "cluster-health"

// Options configure the health controller.
type Options struct {
	// Namespace is the control-plane namespace holding the credential Secrets.
	Namespace string
	// Period between two probes of a cluster.
	Period time.Duration
	// Timeout of one probe.
	Timeout time.Duration
	// Thresholds before the Ready condition flips.
	Thresholds Thresholds
	// Workers is how many clusters are probed at once.
	Workers int
	// Identity names this controller-manager replica in the status.servedBy
	// of the Push clusters it serves.
	Identity string
	// Serves, when set, tells which clusters this replica probes, when
	// replicas share them: the controller then runs on every replica, not
	// only the leader, and leaves the others' clusters alone. Nil: all.
	Serves func(*corev1beta1.FederatedCluster) bool
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.Period <= 0 {
		errs = append(errs, fmt.Errorf("the probe period must be positive, got %s", o.Period))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("the probe timeout must be positive, got %s", o.Timeout))
	}
	if o.Thresholds.Failure < 1 || o.Thresholds.Success < 1 {
		errs = append(errs, fmt.Errorf("the failure and success thresholds must be at least 1, got %d and %d", o.Thresholds.Failure, o.Thresholds.Success))
	}
	if o.Identity == "" {
		errs = append(errs, errors.New("the replica's name must not be empty"))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers must be at least 1, got %d", o.Workers))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("the control-plane namespace must be set"))
	}
	return errors.Join(errs...)
}

// Reconciler probes FederatedClusters and keeps their status.
type Reconciler struct {
	client   client.Client
	cache    *clustercache.Cache
	recorder recorder.EventRecorder
	opts     Options
	now      func() time.Time

	mu      sync.Mutex
	history map[string]*history
	// sightings is the last renewal of each Pull cluster's agent Lease the
	// host saw, timed by its own clock.
	sightings map[string]*sighting
	// ids is the cluster ID last read of each cluster (see duplicateOf).
	ids map[string]string
	// visits asks for a cluster to be looked at now: its member stopped
	// answering, or this replica started or stopped serving it.
	visits chan event.TypedGenericEvent[*corev1beta1.FederatedCluster]
}

// history is what the controller remembers of a cluster between visits.
type history struct {
	lastProbe time.Time
	member    *clustercache.Member // the clients the streak was counted with
	ready     bool                 // readiness of the streak
	streak    int
}

var _ reconcile.Reconciler = (*Reconciler)(nil)

// NewReconciler returns a health controller that keeps cache up to date.
func NewReconciler(c client.Client, cache *clustercache.Cache, rec recorder.EventRecorder, opts Options) *Reconciler {
	return &Reconciler{client: c, cache: cache, recorder: rec, opts: opts, now: time.Now, history: map[string]*history{}, sightings: map[string]*sighting{}, ids: map[string]string{},
		visits: make(chan event.TypedGenericEvent[*corev1beta1.FederatedCluster], 64)}
}

// Visit looks at cluster soon, out of its probe period; when too many
// visits wait already, the periodic one comes soon enough.
func (r *Reconciler) Visit(cluster string) {
	select {
	case r.visits <- event.TypedGenericEvent[*corev1beta1.FederatedCluster]{Object: &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}}}:
	default:
	}
}

// SetupWithManager registers the controller: it watches FederatedClusters
// (spec and labels, not its own status writes), the credential Secrets and
// the agents' Leases of the control-plane namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	// A member whose breaker finds it not answering is probed at once, so
	// that it is reported Offline in seconds, not after the thresholds.
	log := mgr.GetLogger().WithValues("controller", ControllerName)
	r.cache.OnNotAnswering(func(cluster string) {
		breakerTrips.WithLabelValues(cluster).Inc()
		log.Info("Requests to the member got no answer in time; they are paused and the member is probed now", "cluster", cluster)
		r.Visit(cluster)
	})
	// Replicas that share the clusters each probe their own.
	leaderOnly := r.opts.Serves == nil
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1beta1.FederatedCluster{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.clustersForSecret)).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.clusterForLease)).
		WatchesRawSource(source.Channel(r.visits, &handler.TypedEnqueueRequestForObject[*corev1beta1.FederatedCluster]{})).
		// A panic in a reconcile is an error: logged once, retried with
		// backoff and counted (controller_runtime_reconcile_panics_total).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers, RecoverPanic: new(true), NeedLeaderElection: &leaderOnly}).
		Complete(r)
}

// clustersForSecret maps a Secret to the clusters whose secretRef names it.
func (r *Reconciler) clustersForSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.opts.Namespace {
		return nil
	}
	var list corev1beta1.FederatedClusterList
	if err := r.client.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing FederatedClusters for a Secret change", "secret", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for _, fc := range list.Items {
		if fc.Spec.SecretRef != nil && fc.Spec.SecretRef.Name == obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&fc)})
		}
	}
	return reqs
}

// Reconcile connects to and probes one cluster, and writes its status if it
// changed. It comes back after the probe period.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	fc := &corev1beta1.FederatedCluster{}
	if err := r.client.Get(ctx, req.NamespacedName, fc); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("reading FederatedCluster %s: %w", req.Name, err)
	}
	if !fc.DeletionTimestamp.IsZero() {
		r.forget(fc.Name)
		return reconcile.Result{}, nil
	}
	if r.opts.Serves != nil && !r.opts.Serves(fc) {
		// Another replica probes it; this one keeps no clients of it.
		// Serving it again brings a visit, and so does the next period.
		r.cache.Remove(fc.Name)
		r.resetHistory(fc.Name)
		return reconcile.Result{RequeueAfter: r.opts.Period}, nil
	}
	obs, wait, err := r.observe(ctx, fc)
	if err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	if id := obs.clusterID(); id != "" && obs.answered(r.now()) {
		if obs.duplicateOf, err = r.duplicateOf(ctx, fc, id); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, fc, obs); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.nextVisit(obs)}, nil
}

// observe connects to the cluster and probes it. A positive wait means the
// last probe is too recent and nothing was observed: come back then.
func (r *Reconciler) observe(ctx context.Context, fc *corev1beta1.FederatedCluster) (observation, time.Duration, error) {
	if fc.Spec.SyncMode == corev1beta1.SyncModePull {
		r.cache.Remove(fc.Name)
		r.resetHistory(fc.Name)
		lease, err := r.readLease(ctx, fc.Name)
		if err != nil {
			return observation{}, 0, err
		}
		return observation{pull: true, lease: lease}, 0, nil
	}
	conn, err := clustercache.Load(ctx, r.client, r.opts.Namespace, fc)
	var malformed *clustercache.MalformedError
	if errors.As(err, &malformed) {
		r.cache.Remove(fc.Name)
		r.resetHistory(fc.Name)
		return observation{malformed: malformed}, 0, nil
	}
	if err != nil {
		return observation{}, 0, err
	}
	member, _, err := r.cache.Set(fc.Name, conn)
	if err != nil {
		return observation{}, 0, fmt.Errorf("connecting to cluster %s: %w", fc.Name, err)
	}
	if wait := r.untilDue(fc.Name, member); wait > 0 {
		return observation{}, wait, nil
	}
	obs := r.probe(ctx, fc.Name, member)
	obs.servedBy = r.opts.Identity
	return obs, 0, nil
}

// nextVisit is when to look at a cluster again: after the probe period,
// or, for a Pull cluster whose agent is alive, just after its Lease would
// expire if it is not renewed before (a renewal triggers a visit anyway).
func (r *Reconciler) nextVisit(obs observation) time.Duration {
	if !obs.pull || !obs.lease.found {
		return r.opts.Period
	}
	if until := obs.lease.expiresAt().Sub(r.now()) + time.Second; until > 0 && until < r.opts.Period {
		return until
	}
	return r.opts.Period
}

// untilDue returns how long until the cluster's next probe is due: zero when
// it was never probed with these clients, or its period is over. Visits
// triggered by watch events between probes must not count as probes.
func (r *Reconciler) untilDue(name string, member *clustercache.Member) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.history[name]
	if h == nil || h.member != member || (h.ready && member.Breaker.Open() != nil) {
		return 0 // not probed with these clients, or it stopped answering
	}
	// A little slack, so that a requeue that fires a hair early still probes.
	const slack = 50 * time.Millisecond
	if wait := h.lastProbe.Add(r.opts.Period).Sub(r.now()); wait > slack {
		return wait
	}
	return 0
}

// probe probes the member and counts the streak it extends.
func (r *Reconciler) probe(ctx context.Context, name string, member *clustercache.Member) observation {
	pctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	start := r.now()
	res := probe(clustercache.Probing(pctx), member.Kube.Discovery().RESTClient(), member.Config.Host)
	// The member's breaker saw requests wait for seconds with no answer,
	// and the probe got none either: that is Offline now, with no need for
	// more probes to agree.
	res.decisive = res.outcome == probeUnreachable && member.Breaker.Open() != nil
	probeDuration.WithLabelValues(name, outcomeNames[res.outcome]).Observe(r.now().Sub(start).Seconds())

	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.history[name]
	ready := res.outcome == probeReady
	if h == nil || h.member != member || h.ready != ready {
		h = &history{member: member, ready: ready}
		r.history[name] = h
	}
	h.streak++
	h.lastProbe = start
	return observation{probe: res, streak: h.streak}
}

// writeStatus writes the status obs leads to, only if it differs, and
// records an Event when readiness or its reason changed.
func (r *Reconciler) writeStatus(ctx context.Context, fc *corev1beta1.FederatedCluster, obs observation) error {
	next := nextStatus(fc.Status, obs, r.opts.Thresholds, fc.Generation, metav1.NewTime(r.now()))
	setReadyMetric(fc.Name, next)
	if equality.Semantic.DeepEqual(fc.Status, next) {
		return nil
	}
	before := fc.DeepCopy()
	fc.Status = next
	if err := r.client.Status().Patch(ctx, fc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing status of FederatedCluster %s: %w", fc.Name, err)
	}
	statusWrites.WithLabelValues(fc.Name).Inc()
	r.recordTransition(before, fc)
	return nil
}

// recordTransition emits an Event when the Ready condition's status or
// reason changed.
func (r *Reconciler) recordTransition(before, after *corev1beta1.FederatedCluster) {
	was := meta.FindStatusCondition(before.Status.Conditions, corev1beta1.ClusterReady)
	now := meta.FindStatusCondition(after.Status.Conditions, corev1beta1.ClusterReady)
	if now == nil || (was != nil && was.Status == now.Status && was.Reason == now.Reason) {
		return
	}
	eventType := corev1.EventTypeWarning
	if now.Status == metav1.ConditionTrue {
		eventType = corev1.EventTypeNormal
	}
	r.recorder.Eventf(after, nil, eventType, now.Reason, "Probe", "Ready=%s: %s", now.Status, now.Message)
}

func setReadyMetric(name string, st corev1beta1.FederatedClusterStatus) {
	v := 0.0
	if meta.IsStatusConditionTrue(st.Conditions, corev1beta1.ClusterReady) {
		v = 1
	}
	readyGauge.WithLabelValues(name).Set(v)
}

// forget drops everything kept about a cluster that left.
func (r *Reconciler) forget(name string) {
	r.cache.Remove(name)
	r.resetHistory(name)
	r.mu.Lock()
	delete(r.sightings, name)
	delete(r.ids, name)
	r.mu.Unlock()
	forgetMetrics(name)
}

func (r *Reconciler) resetHistory(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.history, name)
}
