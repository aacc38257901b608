package typeconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// ControllerName names the controller in logs and metrics.
const ControllerName = "federatedtypeconfig"

// FinalizerRelease is set on every FederatedTypeConfig: when one is
// deleted (or its propagation Disabled), its federated resources lose the
// sync finalizer that no controller would remove any more, so that they can
// still be deleted. Their member copies are left as they are.
const FinalizerRelease = "fedwarden.io/release-federated-resources"

// notServedRetry is how soon a type the host does not serve yet is looked
// at again (its CRD may be on its way, as with `fedwarden enable`), and a
// type whose controller has not started working yet.
const notServedRetry = 3 * time.Second

// Reconciler runs one propagation controller per enabled type.
type Reconciler struct {
	mgr      manager.Manager
	client   client.Client
	clusters *clustercache.Cache
	opts     propagation.Options
	// newController builds the controller of a type.
	newController func(propagation.Type) (*propagation.Controller, error)
	// readOnly: an agent's, which writes no FederatedTypeConfig.
	readOnly bool

	started chan struct{}   // closed once the manager's context is known
	after   <-chan struct{} // Start waits for it (StartAfter); nil: no wait
	baseCtx context.Context // the manager's context: controllers run under it
	// died tells the controller which FederatedTypeConfig's propagation
	// controller stopped by itself, so that its status says so at once.
	died chan event.GenericEvent

	mu      sync.Mutex
	running map[string]*running // by FederatedTypeConfig name
	// stopped are the errors of the propagation controllers that stopped
	// by themselves, by FederatedTypeConfig name, until one works again.
	stopped map[string]error
	// namespaces is the last answer of FederatedNamespaceKind the
	// federation controller saw.
	namespaces schema.GroupVersionKind
}

type running struct {
	ctrl   *propagation.Controller
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ reconcile.Reconciler = (*Reconciler)(nil)
	_ manager.Runnable     = (*Reconciler)(nil)
)

// NewReconciler returns the federation controller.
func NewReconciler(mgr manager.Manager, clusters *clustercache.Cache, opts propagation.Options) *Reconciler {
	r := &Reconciler{
		mgr: mgr, client: mgr.GetClient(), clusters: clusters, opts: opts,
		started: make(chan struct{}), running: map[string]*running{}, stopped: map[string]error{}, died: make(chan event.GenericEvent, 16),
	}
	r.newController = func(typ propagation.Type) (*propagation.Controller, error) {
		return propagation.New(r.mgr, typ, r.clusters, r, r, r.opts)
	}
	return r
}

// NewAgentReconciler returns the federation controller of a Pull cluster's
// agent: it runs the controller newController returns for every enabled
// type, and writes nothing to the FederatedTypeConfigs (the host's
// controller-manager keeps their status and finalizers). health, when
// set, is given each kind's spec.healthRules.
func NewAgentReconciler(mgr manager.Manager, health *copyhealth.Evaluator, newController func(propagation.Type) (*propagation.Controller, error)) *Reconciler {
	return &Reconciler{
		mgr: mgr, client: mgr.GetClient(), newController: newController, readOnly: true, opts: propagation.Options{Health: health},
		started: make(chan struct{}), running: map[string]*running{}, stopped: map[string]error{}, died: make(chan event.GenericEvent, 16),
	}
}

// SetupWithManager registers the controller, and the runnable that lends
// its context to the propagation controllers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.Add(r); err != nil {
		return fmt.Errorf("adding the %s runnable: %w", ControllerName, err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1beta1.FederatedTypeConfig{}).
		WatchesRawSource(source.Channel(r.died, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{RecoverPanic: new(true)}).
		Complete(r)
}

// Run runs the reconciler outside the manager's runnables until ctx ends:
// a controller of its own on the manager's cache of FederatedTypeConfigs,
// and the propagation controllers it starts. Use it for an agent
// reconciler (NewAgentReconciler) whose life is shorter than the
// manager's, such as the syncs of a cluster a controller-manager replica
// serves for a while; name names its controller in logs and metrics.
func (r *Reconciler) Run(ctx context.Context, name string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := controller.NewTypedUnmanaged(name, controller.TypedOptions[reconcile.Request]{
		Reconciler: r, SkipNameValidation: new(true), RecoverPanic: new(true), Logger: r.mgr.GetLogger().WithName(name),
	})
	if err != nil {
		return fmt.Errorf("creating the controller %s: %w", name, err)
	}
	sources := []source.TypedSource[reconcile.Request]{
		source.Kind(r.mgr.GetCache(), &corev1beta1.FederatedTypeConfig{}, &handler.TypedEnqueueRequestForObject[*corev1beta1.FederatedTypeConfig]{}),
		source.Channel(r.died, &handler.EnqueueRequestForObject{}),
	}
	for _, src := range sources {
		if err := c.Watch(src); err != nil {
			return fmt.Errorf("watching for the controller %s: %w", name, err)
		}
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = r.Start(ctx) // stops the propagation controllers when ctx ends
	}()
	err = c.Start(ctx)
	cancel()
	<-stopped
	return err
}

// StartAfter makes Start wait for ready to close before any propagation
// controller starts: the leader's wait for the syncs it ran as a replica
// to stop, so that no cluster has two writers in one process.
func (r *Reconciler) StartAfter(ready <-chan struct{}) { r.after = ready }

// Start keeps the manager's context for the propagation controllers and
// stops them all when it ends.
func (r *Reconciler) Start(ctx context.Context) error {
	if r.after != nil {
		select {
		case <-r.after:
		case <-ctx.Done():
			return nil
		}
	}
	r.baseCtx = ctx
	close(r.started)
	<-ctx.Done()
	r.mu.Lock()
	names := make([]string, 0, len(r.running))
	for name := range r.running {
		names = append(names, name)
	}
	r.mu.Unlock()
	for _, name := range names {
		r.stop(name)
	}
	return nil
}

// NeedLeaderElection: only the leader propagates.
func (r *Reconciler) NeedLeaderElection() bool { return true }

// Reconcile starts, restarts or stops the propagation controller of one
// FederatedTypeConfig and writes its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	select {
	case <-r.started:
	case <-ctx.Done():
		return reconcile.Result{}, ctx.Err()
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := r.client.Get(ctx, req.NamespacedName, ftc); err != nil {
		if apierrors.IsNotFound(err) {
			r.stop(req.Name)
			return reconcile.Result{}, r.noteNamespaces(ctx)
		}
		return reconcile.Result{}, fmt.Errorf("reading FederatedTypeConfig %s: %w", req.Name, err)
	}
	if !ftc.DeletionTimestamp.IsZero() {
		r.stop(ftc.Name)
		if r.readOnly {
			return reconcile.Result{}, nil
		}
		if err := r.noteNamespaces(ctx); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.release(ctx, ftc)
	}
	if r.readOnly {
		_, retry := r.converge(ctx, ftc)
		return reconcile.Result{RequeueAfter: retry}, nil
	}
	if !controllerutil.ContainsFinalizer(ftc, FinalizerRelease) {
		before := ftc.DeepCopy()
		controllerutil.AddFinalizer(ftc, FinalizerRelease)
		if err := r.client.Patch(ctx, ftc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer to FederatedTypeConfig %s: %w", ftc.Name, err)
		}
	}
	state, retry := r.converge(ctx, ftc)
	if err := r.noteNamespaces(ctx); err != nil {
		return reconcile.Result{}, err
	}
	if ftc.Spec.Propagation == corev1beta1.Disabled {
		// No controller removes the sync finalizer while the type is
		// disabled: release the resources, or deleting one would hang.
		if err := r.releaseResources(ctx, propagation.TypeFromConfig(ftc)); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.writeStatus(ctx, ftc, state); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: retry}, nil
}

// state is what the status of a FederatedTypeConfig reports.
type state struct {
	running         bool
	reason, message string
	// rules is the condition on spec.healthRules; nil when it has none.
	rules *metav1.Condition
}

// converge makes the running controller match ftc.
func (r *Reconciler) converge(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) (state, time.Duration) {
	if ftc.Spec.Propagation == corev1beta1.Disabled {
		r.stop(ftc.Name)
		return state{reason: corev1beta1.ReasonPropagationDisabled, message: "spec.propagation is Disabled: member copies are left as they are"}, 0
	}
	typ := propagation.TypeFromConfig(ftc)
	rules := r.setHealthRules(ftc)
	s, retry := r.establish(ctx, ftc, typ)
	s.rules = rules
	return s, retry
}

// setHealthRules gives the health evaluator the kind's spec.healthRules,
// and returns the condition on them (nil when there are none).
func (r *Reconciler) setHealthRules(ftc *corev1beta1.FederatedTypeConfig) *metav1.Condition {
	if r.opts.Health == nil {
		return nil
	}
	gk := schema.GroupKind{Group: ftc.Spec.TargetType.Group, Kind: ftc.Spec.TargetType.Kind}
	err := r.opts.Health.SetRules(gk, ftc.Spec.HealthRules)
	if len(ftc.Spec.HealthRules) == 0 {
		return nil
	}
	c := &metav1.Condition{Type: corev1beta1.TypeConfigHealthRules, Status: metav1.ConditionTrue, Reason: corev1beta1.ReasonHealthRulesCompiled,
		Message: fmt.Sprintf("%d health rules judge %s copies before the built-in ones", len(ftc.Spec.HealthRules), ftc.Spec.TargetType.Kind), ObservedGeneration: ftc.Generation}
	if err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, corev1beta1.ReasonHealthRulesInvalid
		c.Message = conditionMessage(fmt.Sprintf("%v; until they are fixed, every %s copy is Unknown", err, ftc.Spec.TargetType.Kind))
	}
	return c
}

// conditionMessage cuts m to what a condition's message holds (32768
// bytes), between runes.
func conditionMessage(m string) string {
	const limit = 32768
	if len(m) <= limit {
		return m
	}
	return strings.ToValidUTF8(m[:limit-len("…")], "") + "…"
}

// establish starts the propagation controller of typ, or says why it
// does not run.
func (r *Reconciler) establish(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig, typ propagation.Type) (state, time.Duration) {
	if err := r.served(typ); err != nil {
		r.stop(ftc.Name)
		return state{reason: corev1beta1.ReasonTypeNotServed, message: err.Error()}, notServedRetry
	}
	c, err := r.ensureRunning(typ)
	if err != nil {
		return state{reason: corev1beta1.ReasonControllerFailed, message: err.Error()}, notServedRetry
	}
	if c.Synced() {
		r.mu.Lock()
		delete(r.stopped, typ.Name)
		r.mu.Unlock()
		return runningState(typ), 0
	}
	r.mu.Lock()
	stopped := r.stopped[typ.Name]
	r.mu.Unlock()
	wasRunning := ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning && ftc.Status.ObservedGeneration == ftc.Generation
	return startingState(typ, wasRunning, stopped, r.listable(ctx, typ)), notServedRetry
}

// runningState is the state of a type whose controller works.
func runningState(typ propagation.Type) state {
	return state{running: true, reason: corev1beta1.ReasonControllerRunning, message: fmt.Sprintf("propagating %s to member clusters as %s", typ.Federated.Kind, typ.Target.Kind)}
}

// startingState is the state of a type whose controller runs but has not
// listed the federated resources yet: it failed when the list fails
// (listErr) or the last controller stopped with an error, it still runs
// when it did before this start (a restart reports nothing new), else it
// is starting.
func startingState(typ propagation.Type, wasRunning bool, stopped, listErr error) state {
	switch {
	case listErr != nil:
		msg := fmt.Sprintf("the propagation controller cannot list %s (%v): it waits, and works once the list succeeds; "+
			"if the controller-manager may not list it, grant it (the Helm chart's rbac.federatedResources)", typ.Federated.Kind, listErr)
		if stopped != nil {
			msg += fmt.Sprintf("; it gave up once and was started again (%v)", stopped)
		}
		return state{reason: corev1beta1.ReasonControllerFailed, message: msg}
	case stopped != nil:
		return state{reason: corev1beta1.ReasonControllerFailed, message: fmt.Sprintf("stopped: %v; it was started again, and waits for its first list of %s", stopped, typ.Federated.Kind)}
	case wasRunning:
		return runningState(typ)
	}
	return state{reason: corev1beta1.ReasonControllerStarting, message: fmt.Sprintf("the propagation controller was started and waits for its first list of %s", typ.Federated.Kind)}
}

// listable returns why the host does not let the controller-manager list
// the federated resources of typ, or nil.
func (r *Reconciler) listable(ctx context.Context, typ propagation.Type) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(typ.Federated.GroupVersion().WithKind(typ.Federated.Kind + "List"))
	if err := r.mgr.GetAPIReader().List(ctx, list, client.Limit(1)); err != nil {
		return fmt.Errorf("listing %s: %w", typ.Federated.Kind, err)
	}
	return nil
}

// served checks that the host serves the federated and the target kinds.
func (r *Reconciler) served(typ propagation.Type) error {
	mapper := r.mgr.GetRESTMapper()
	var errs []error
	kinds := []schema.GroupVersionKind{typ.Federated, typ.Target}
	if r.readOnly {
		// An agent writes the target kind to its own cluster, not the host.
		kinds = kinds[:1]
	}
	for _, gvk := range kinds {
		if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			errs = append(errs, fmt.Errorf("the host does not serve %s (is its CRD installed? 'fedwarden enable' installs it)", gvk))
		}
	}
	return errors.Join(errs...)
}

// ensureRunning starts the controller of typ, replacing one that runs with
// other settings or that stopped by itself, and returns it.
func (r *Reconciler) ensureRunning(typ propagation.Type) (*propagation.Controller, error) {
	r.mu.Lock()
	run, ok := r.running[typ.Name]
	r.mu.Unlock()
	switch {
	case ok && run.isDone():
		// It stopped by itself: its error stays in r.stopped until the new
		// one works.
		run.cancel()
		r.mu.Lock()
		delete(r.running, typ.Name)
		r.mu.Unlock()
	case ok && run.ctrl.Type() == typ:
		return run.ctrl, nil
	case ok:
		r.stop(typ.Name)
	}
	c, err := r.newController(typ)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(r.baseCtx)
	run = &running{ctrl: c, cancel: cancel, done: make(chan struct{})}
	go r.run(ctx, typ.Name, run)
	r.mu.Lock()
	r.running[typ.Name] = run
	r.mu.Unlock()
	ctrl.LoggerFrom(r.baseCtx).Info("Started the propagation controller", "type", typ.Name)
	return c, nil
}

// run runs a propagation controller until ctx ends. One that stops by
// itself before (it could not list its resources in time, say) is
// reported: its error is kept for the status, and its FederatedTypeConfig
// is reconciled at once, which starts it again.
func (r *Reconciler) run(ctx context.Context, name string, run *running) {
	err := run.ctrl.Start(ctx)
	if ctx.Err() != nil {
		close(run.done)
		return
	}
	if err == nil {
		err = errors.New("it returned without an error")
	}
	r.mu.Lock()
	r.stopped[name] = err
	r.mu.Unlock()
	close(run.done)
	ctrl.LoggerFrom(ctx).Error(err, "Propagation controller stopped; starting it again", "type", name)
	select {
	case r.died <- event.GenericEvent{Object: &corev1beta1.FederatedTypeConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
	case <-r.baseCtx.Done():
	}
}

// isDone tells whether the controller has stopped.
func (run *running) isDone() bool {
	select {
	case <-run.done:
		return true
	default:
		return false
	}
}

// stop stops the controller of the named type and waits until it has
// stopped. It does not hold the lock while waiting: a stopping controller's
// reconciles may still ask about namespaces.
func (r *Reconciler) stop(name string) {
	r.mu.Lock()
	run, ok := r.running[name]
	delete(r.running, name)
	delete(r.stopped, name)
	r.mu.Unlock()
	if !ok {
		return
	}
	run.cancel()
	<-run.done
	ctrl.LoggerFrom(r.baseCtx).Info("Stopped the propagation controller", "type", name)
}

// FederatedNamespaceKind returns the kind of FederatedNamespaces, when
// namespaces are federated: when a FederatedTypeConfig of Namespaces
// enables propagation. It answers from the FederatedTypeConfigs, which the
// cache has all listed before any propagation controller starts (the
// federation controller starts them from its reconciles, which run once its
// cache has synced), not from the controllers that run: the order in which
// they start changes nothing.
func (r *Reconciler) FederatedNamespaceKind(ctx context.Context) (schema.GroupVersionKind, bool, error) {
	var list corev1beta1.FederatedTypeConfigList
	if err := r.client.List(ctx, &list); err != nil {
		return schema.GroupVersionKind{}, false, fmt.Errorf("listing FederatedTypeConfigs: %w", err)
	}
	gvk, ok := propagation.NamespaceKind(list.Items)
	return gvk, ok, nil
}

// noteNamespaces syncs every namespaced resource again when whether (or
// as which kind) namespaces are federated changed: each then finds its
// namespace's restriction, and reports it.
func (r *Reconciler) noteNamespaces(ctx context.Context) error {
	if r.readOnly {
		return nil // an agent's controllers do not restrict by namespace
	}
	gvk, _, err := r.FederatedNamespaceKind(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	changed := gvk != r.namespaces
	r.namespaces = gvk
	r.mu.Unlock()
	if changed {
		r.resync(func(t propagation.Type) bool { return t.TargetNamespaced })
	}
	return nil
}

// NamespaceChanged syncs again every namespaced federated resource in
// namespace.
func (r *Reconciler) NamespaceChanged(namespace string) {
	r.mu.Lock()
	var ctrls []*propagation.Controller
	for _, run := range r.running {
		if t := run.ctrl.Type(); t.TargetNamespaced {
			ctrls = append(ctrls, run.ctrl)
		}
	}
	r.mu.Unlock()
	for _, c := range ctrls {
		go func() {
			if err := c.EnqueueNamespace(r.baseCtx, namespace); err != nil {
				ctrl.LoggerFrom(r.baseCtx).Error(err, "Syncing a namespace again", "namespace", namespace)
			}
		}()
	}
}

// ResyncAll syncs every federated resource of every enabled type again,
// for example when a member's capacity changed. The cluster is not used to
// narrow the set: a resource may be scheduled there only now.
func (r *Reconciler) ResyncAll(string) {
	r.resync(func(propagation.Type) bool { return true })
}

// resync syncs again every federated resource of the running types that
// match.
func (r *Reconciler) resync(match func(propagation.Type) bool) {
	r.mu.Lock()
	var ctrls []*propagation.Controller
	for _, run := range r.running {
		if match(run.ctrl.Type()) {
			ctrls = append(ctrls, run.ctrl)
		}
	}
	r.mu.Unlock()
	for _, c := range ctrls {
		go c.EnqueueAll(r.baseCtx)
	}
}

// writeStatus writes the FederatedTypeConfig's status when it changed.
func (r *Reconciler) writeStatus(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig, s state) error {
	next := *ftc.Status.DeepCopy()
	next.ObservedGeneration = ftc.Generation
	next.PropagationController = corev1beta1.ControllerStatusNotRunning
	cond := metav1.Condition{Type: corev1beta1.TypeConfigEstablished, Status: metav1.ConditionFalse, Reason: s.reason, Message: s.message, ObservedGeneration: ftc.Generation}
	if s.running {
		next.PropagationController = corev1beta1.ControllerStatusRunning
		cond.Status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&next.Conditions, cond)
	if s.rules != nil {
		meta.SetStatusCondition(&next.Conditions, *s.rules)
	} else {
		meta.RemoveStatusCondition(&next.Conditions, corev1beta1.TypeConfigHealthRules)
	}
	if equality.Semantic.DeepEqual(ftc.Status, next) {
		return nil
	}
	before := ftc.DeepCopy()
	ftc.Status = next
	if err := r.client.Status().Patch(ctx, ftc, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("writing the status of FederatedTypeConfig %s: %w", ftc.Name, err)
	}
	return nil
}

// release removes the sync finalizer from the federated resources of a
// deleted FederatedTypeConfig, then its own finalizer.
func (r *Reconciler) release(ctx context.Context, ftc *corev1beta1.FederatedTypeConfig) error {
	if !controllerutil.ContainsFinalizer(ftc, FinalizerRelease) {
		return nil
	}
	if err := r.releaseResources(ctx, propagation.TypeFromConfig(ftc)); err != nil {
		return err
	}
	before := ftc.DeepCopy()
	controllerutil.RemoveFinalizer(ftc, FinalizerRelease)
	if err := r.client.Patch(ctx, ftc, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the finalizer of FederatedTypeConfig %s: %w", ftc.Name, err)
	}
	return nil
}

// releaseResources removes the sync finalizer from every federated
// resource of typ; their member copies stay as they are.
func (r *Reconciler) releaseResources(ctx context.Context, typ propagation.Type) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(typ.Federated.GroupVersion().WithKind(typ.Federated.Kind + "List"))
	err := r.mgr.GetAPIReader().List(ctx, list)
	if err != nil && !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("listing %s to release them: %w", typ.Federated.Kind, err)
	}
	for i := range list.Items {
		item := &list.Items[i]
		if !controllerutil.ContainsFinalizer(item, typesv1beta1.FinalizerSync) {
			continue
		}
		before := item.DeepCopy()
		controllerutil.RemoveFinalizer(item, typesv1beta1.FinalizerSync)
		if err := r.client.Patch(ctx, item, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("releasing %s %s: %w", typ.Federated.Kind, client.ObjectKeyFromObject(item), err)
		}
	}
	return nil
}
