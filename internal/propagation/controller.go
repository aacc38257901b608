package propagation

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/hostcache"
	"github.com/fedwarden/fedwarden/internal/scheduler"
)

// Options configure every propagation controller.
type Options struct {
	// Namespace is the control-plane namespace: the ClusterPropagatedVersions
	// of cluster-scoped federated resources live there.
	Namespace string
	// Workers is how many federated resources of one type sync at once.
	Workers int
	// MemberListTimeout bounds the first list of a type in a member.
	MemberListTimeout time.Duration
	// HostListTimeout bounds a type controller's first list of its
	// federated kind and the CPVs on the host: past it the controller gives
	// up, its FederatedTypeConfig says so, and it is started again.
	HostListTimeout time.Duration
	// RetryPeriod is when a resource with an unreachable or failing
	// cluster is looked at again, besides the events that trigger it.
	RetryPeriod time.Duration
	// Scheduler decides where each resource goes; nil means every plugin,
	// without member capacity.
	Scheduler *scheduler.Scheduler
	// DefaultRemediation applies to resources whose drift policy names
	// none: Enforce (also when empty) or Alert.
	DefaultRemediation typesv1beta1.Remediation
	// MaxWaiver is how far ahead a drift waiver may expire and be
	// honoured (--max-waiver-duration); drift.DefaultMaxWaiver when 0.
	MaxWaiver time.Duration
	// ResyncPeriod is how often every resource is synced again even when
	// nothing signalled a change (0: never); a resync with nothing drifted
	// writes nothing.
	ResyncPeriod time.Duration
	// DriftNotifier is told of each drift transition, beside the Events;
	// nil means none.
	DriftNotifier DriftNotifier
	// Dependencies is the dependencies stage (spec.propagateDependencies);
	// nil: workloads' dependencies do not go with them (an agent).
	Dependencies *dependencies.Stage
	// Health judges member copies by their kind's health rules; the
	// federation controller sets each kind's spec.healthRules on it. Nil:
	// no health is recorded.
	Health *copyhealth.Evaluator
	// Shard is this replica's share of the Push clusters when replicas
	// share them; nil: this process writes every Push cluster.
	Shard Shard
}

// DefaultOptions are the defaults of the controller-manager's and the
// agent's flags.
func DefaultOptions() Options {
	return Options{
		Workers:            16,
		MemberListTimeout:  30 * time.Second,
		HostListTimeout:    2 * time.Minute,
		RetryPeriod:        30 * time.Second,
		DefaultRemediation: typesv1beta1.RemediationEnforce,
		MaxWaiver:          drift.DefaultMaxWaiver,
		ResyncPeriod:       10 * time.Minute,
	}
}

// Namespaces tells a namespaced type's controller whether namespaces are
// federated, and of which kind the FederatedNamespaces are. The answer must
// not depend on which type controllers have started yet: a controller that
// started before the namespaces' one must not place a resource where its
// namespace does not go.
type Namespaces interface {
	FederatedNamespaceKind(ctx context.Context) (schema.GroupVersionKind, bool, error)
}

// NamespaceNotifier is told when a FederatedNamespace's placement may have
// changed, so that the resources in that namespace are synced again.
type NamespaceNotifier interface {
	NamespaceChanged(namespace string)
}

// Controller is the propagation controller of one type. It is not added to
// the manager: the federation controller starts and stops it at run time.
type Controller struct {
	typ        Type
	reconciler *Reconciler
	ctrl       controller.TypedController[reconcile.Request]
	cache      interface {
		GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
		RemoveInformer(ctx context.Context, obj client.Object) error
	}
	events  chan event.TypedGenericEvent[reconcile.Request]
	stopped chan struct{} // closed when Start returns
	// synced is set once the host informer of the federated type has
	// listed them all: the controller then works.
	synced atomic.Bool
	// sharesInformer: other controllers of the type use its host informer
	// (the controllers of each cluster a replica serves), which stays.
	sharesInformer bool
}

// New returns the propagation controller of typ.
func New(mgr manager.Manager, typ Type, clusters *clustercache.Cache, namespaces Namespaces, notifier NamespaceNotifier, opts Options) (*Controller, error) {
	if opts.Scheduler == nil {
		sched, err := scheduler.New(scheduler.DefaultPlugins, nil)
		if err != nil {
			return nil, err
		}
		opts.Scheduler = sched
	}
	r := newReconciler(mgr, typ, opts, nil)
	r.apply.clusters, r.place.namespaces = clusters, namespaces
	r.notifier = notifier
	return newController(mgr, r, "propagation-"+typ.Name)
}

// NewAgent returns the controller of typ in the agent of the Pull cluster
// member.Name: it syncs the resources whose CPV places them there to member,
// with the same code as the host, and writes that cluster's entry of their
// CPVs as fieldManager. It expects a manager whose cache holds only the CPVs
// placed on the cluster.
func NewAgent(mgr manager.Manager, typ Type, member *clustercache.Member, fieldManager string, opts Options) (*Controller, error) {
	agent := &agentSide{cluster: member.Name, member: member, fieldManager: fieldManager, host: mgr.GetAPIReader(), own: &ownLabels{}}
	return newController(mgr, newReconciler(mgr, typ, opts, agent), "agent-"+typ.Name)
}

// NewServed returns the controller of typ that writes member, a Push
// cluster this controller-manager replica serves while another replica
// leads (opts.Shard says which): it syncs it with the agent's code, from
// the CPVs the leader writes, and writes that cluster's entry of each CPV
// as ClusterFieldManager.
func NewServed(mgr manager.Manager, typ Type, member *clustercache.Member, opts Options) (*Controller, error) {
	served := &agentSide{cluster: member.Name, member: member, fieldManager: ClusterFieldManager(member.Name), host: mgr.GetAPIReader(), own: &ownLabels{}}
	c, err := newController(mgr, newReconciler(mgr, typ, opts, served), "served-"+typ.Name)
	if err != nil {
		return nil, err
	}
	c.sharesInformer = true
	return c, nil
}

// newReconciler returns the reconciler of typ and the owners of its
// stages; agent is nil on the host.
func newReconciler(mgr manager.Manager, typ Type, opts Options, agent *agentSide) *Reconciler {
	r := &Reconciler{
		typ: typ, client: mgr.GetClient(), reader: mgr.GetAPIReader(), opts: opts, agent: agent,
		place:  &placer{typ: typ, client: mgr.GetClient(), scheduler: opts.Scheduler},
		apply:  &applier{typ: typ, defaultRemediation: opts.DefaultRemediation, maxWaiver: opts.MaxWaiver, agent: agent, health: opts.Health, shard: opts.Shard},
		record: &cpvStore{typ: typ, client: mgr.GetClient(), reader: mgr.GetAPIReader(), namespace: opts.Namespace, now: time.Now, agent: agent, sharing: opts.Shard != nil},
		report: &reporter{typ: typ, client: mgr.GetClient(), recorder: mgr.GetEventRecorder("fedwarden-propagation"),
			drifted: newDriftGauge(typ.Federated.Kind), now: time.Now, driftNotifier: opts.DriftNotifier},
	}
	r.report.dependencies = r.carriesDependencies()
	return r
}

// newController wires r into a controller named name: its watches, and the
// member watches that enqueue it.
func newController(mgr manager.Manager, r *Reconciler, name string) (*Controller, error) {
	c := &Controller{typ: r.typ, cache: mgr.GetCache(), events: make(chan event.TypedGenericEvent[reconcile.Request], 1024), stopped: make(chan struct{})}
	r.apply.watches = newMemberWatches(r.typ, c.enqueue, r.opts.MemberListTimeout, &r.apply.written, &r.syncing)
	r.apply.watches.health = r.opts.Health
	r.enqueue = c.enqueue
	r.place.watches = r.apply.watches
	r.stopped = c.stopped
	c.reconciler = r
	ctrl, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[reconcile.Request]{
		Reconciler:              r,
		MaxConcurrentReconciles: r.opts.Workers,
		CacheSyncTimeout:        r.opts.HostListTimeout,
		SkipNameValidation:      new(true),
		Logger:                  mgr.GetLogger(),
		// A panic in a sync is an error: logged once, retried with
		// backoff and counted (controller_runtime_reconcile_panics_total);
		// the other resources go on.
		RecoverPanic: new(true),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the controller of %s: %w", r.typ.Name, err)
	}
	c.ctrl = ctrl
	if err := c.watch(mgr); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) watch(mgr manager.Manager) error {
	fed := c.typ.newFederated()
	sources := []source.TypedSource[reconcile.Request]{
		// client.Object, not the unstructured type: the host cache holds
		// federated resources as JSON (hostcache.Hold).
		source.Kind[client.Object](mgr.GetCache(), fed, &handler.TypedEnqueueRequestForObject[client.Object]{}, federatedChanged()),
		// Someone else's CPV writes: a Pull cluster's agent reporting (on
		// the host), the host's placement or versions (in an agent).
		source.Kind(mgr.GetCache(), &typesv1beta1.ClusterPropagatedVersion{}, handler.TypedEnqueueRequestsFromMapFunc(c.cpvTarget), c.notOwnWrite()),
		source.TypedChannel(c.events, handler.TypedFuncs[reconcile.Request, reconcile.Request]{
			GenericFunc: func(_ context.Context, e event.TypedGenericEvent[reconcile.Request], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				q.Add(e.Object)
			},
		}),
	}
	if c.reconciler.agent == nil {
		sources = append(sources,
			source.Kind(mgr.GetCache(), &corev1beta1.FederatedCluster{}, handler.TypedEnqueueRequestsFromMapFunc(c.allFederated), clusterChanged()),
			source.Kind(mgr.GetCache(), &schedulingv1alpha1.ReplicaSchedulingPreference{}, handler.TypedEnqueueRequestsFromMapFunc(c.preferenceTarget), preferenceChanged()),
		)
	}
	sources = append(sources, c.dependencySources(mgr.GetCache())...)
	for _, s := range sources {
		if err := c.ctrl.Watch(s); err != nil {
			return fmt.Errorf("watching for the propagation controller of %s: %w", c.typ.Name, err)
		}
	}
	return nil
}

// Start runs the controller until ctx ends, then stops its watches. It
// returns an error when the controller could not start, for example when
// the federated resources could not be listed in time (no right to).
func (c *Controller) Start(ctx context.Context) error {
	defer close(c.stopped)
	defer c.reconciler.apply.watches.stop()
	watchSync, stopWatching := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		c.watchSync(watchSync)
	}()
	err := c.ctrl.Start(ctx)
	stopWatching()
	<-watched
	// The host informer of this federated type goes too, so that a
	// disabled type costs nothing; unless the controllers of the replica's
	// other clusters still use it.
	if !c.sharesInformer {
		if rmErr := c.cache.RemoveInformer(context.Background(), c.typ.newFederated()); rmErr != nil && err == nil {
			err = fmt.Errorf("removing the informer of %s: %w", c.typ.Federated.Kind, rmErr)
		}
	}
	if err != nil {
		return fmt.Errorf("the propagation controller of %s: %w", c.typ.Name, err)
	}
	return nil
}

// watchSync sets synced once the host informer of the federated type has
// synced, or returns when ctx ends.
func (c *Controller) watchSync(ctx context.Context) {
	if _, err := c.cache.GetInformer(ctx, c.typ.newFederated()); err == nil {
		c.synced.Store(true)
	}
}

// Synced tells whether the controller has listed the federated resources
// and works.
func (c *Controller) Synced() bool { return c.synced.Load() }

// Type is the type this controller propagates.
func (c *Controller) Type() Type { return c.typ }

// enqueue asks for the federated resource req to be synced; once the
// controller has stopped, it does nothing.
func (c *Controller) enqueue(req reconcile.Request) {
	select {
	case c.events <- event.TypedGenericEvent[reconcile.Request]{Object: req}:
	case <-c.stopped:
	}
}

// cpvTarget maps a ClusterPropagatedVersion to the federated resource of
// this type it tracks.
func (c *Controller) cpvTarget(_ context.Context, cpv *typesv1beta1.ClusterPropagatedVersion) []reconcile.Request {
	if cpv.Spec.TemplateKind != c.typ.Federated.Kind || cpv.Spec.TemplateAPIVersion != c.typ.Federated.GroupVersion().String() {
		return nil
	}
	key := types.NamespacedName{Name: cpv.Spec.Template}
	if c.typ.FederatedNamespaced {
		key.Namespace = cpv.Namespace
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// notOwnWrite lets through CPV events that this controller's own writes
// do not explain.
func (c *Controller) notOwnWrite() predicate.TypedPredicate[*typesv1beta1.ClusterPropagatedVersion] {
	return predicate.TypedFuncs[*typesv1beta1.ClusterPropagatedVersion]{
		CreateFunc: func(e event.TypedCreateEvent[*typesv1beta1.ClusterPropagatedVersion]) bool {
			return c.cpvNews(e.Object)
		},
		UpdateFunc: func(e event.TypedUpdateEvent[*typesv1beta1.ClusterPropagatedVersion]) bool {
			return c.cpvNews(e.ObjectNew)
		},
	}
}

// cpvNews tells whether a created or updated CPV is news: not a write of
// this controller's own. While its resource syncs, the event is held back
// and decided when the sync ends (see syncing), and cpvNews says no.
func (c *Controller) cpvNews(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
	news := func() bool { return !c.reconciler.record.own.mine(cpv) }
	if target := c.cpvTarget(context.Background(), cpv); len(target) == 1 && c.reconciler.syncing.hold(target[0].NamespacedName, news) {
		return false
	}
	return news()
}

// preferenceTarget maps a ReplicaSchedulingPreference to the federated
// resource of the same name it divides, when it targets this type.
func (c *Controller) preferenceTarget(_ context.Context, rsp *schedulingv1alpha1.ReplicaSchedulingPreference) []reconcile.Request {
	if rsp.Spec.TargetKind != c.typ.Federated.Kind || !c.typ.FederatedNamespaced {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(rsp)}}
}

// EnqueueAll syncs every federated resource of this type, for example when
// a member's capacity changed.
func (c *Controller) EnqueueAll(ctx context.Context) {
	for _, req := range c.allFederated(ctx, nil) {
		c.enqueue(req)
	}
}

// EnqueueNamespace syncs every federated resource of this type in namespace.
func (c *Controller) EnqueueNamespace(ctx context.Context, namespace string) error {
	// Names only, from the cache's namespace index: nothing decoded.
	keys, err := hostcache.Keys(ctx, c.cache, c.typ.newFederated(), namespace)
	if err != nil {
		return err
	}
	for _, key := range keys {
		c.enqueue(reconcile.Request{NamespacedName: key})
	}
	return nil
}

func (t Type) newFederated() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(t.Federated)
	return u
}

// allFederated maps a FederatedCluster change to every federated resource
// of the type: any of them may be placed on it.
func (c *Controller) allFederated(ctx context.Context, _ *corev1beta1.FederatedCluster) []reconcile.Request {
	select {
	case <-c.reconciler.stopped:
		// The handler outlives a stopped controller on the shared
		// FederatedCluster informer; reading the cache now would start the
		// informer of the federated type again.
		return nil
	default:
	}
	// Names only, from the cache's index: nothing decoded or copied.
	keys, err := hostcache.Keys(ctx, c.cache, c.typ.newFederated(), "")
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing federated resources for a FederatedCluster change", "kind", c.typ.Federated.Kind)
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(keys))
	for _, key := range keys {
		reqs = append(reqs, reconcile.Request{NamespacedName: key})
	}
	return reqs
}

// sameNames tells whether two sorted name lists are equal.
func sameNames(a, b []string) bool { return slices.Equal(a, b) }

// ignoreNotFound returns nil for a NotFound error.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
