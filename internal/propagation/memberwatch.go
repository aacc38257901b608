package propagation

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
)

// memberWatches keeps, per member cluster, an informer on the managed
// copies of one type; their events enqueue the federated resource.
type memberWatches struct {
	typ       Type
	enqueue   func(reconcile.Request)
	syncLimit time.Duration
	// written are the applier's last writes: an event that only echoes
	// one of them enqueues nothing; syncing holds an event back while its
	// resource syncs, until that sync's writes are recorded.
	written *lastWrites
	syncing *syncing
	// changedAt holds, per member copy (cluster/namespace/name), when an
	// update or deletion of it was last seen: drift detection and
	// remediation are timed from there.
	changedAt sync.Map

	// health, when set, judges copies: an update that changes a copy's
	// health calls for a sync, which records it.
	health *copyhealth.Evaluator

	mu        sync.Mutex
	byCluster map[string]*memberWatch
}

type memberWatch struct {
	// lastErr is the latest list or watch error. A pointer, not an
	// atomic.Value: the errors a reflector reports are of several types
	// (a watch that ends, a list refused), and an atomic.Value panics
	// when what it stores changes type.
	lastErr      atomic.Pointer[error]
	member       *clustercache.Member
	informer     cache.SharedIndexInformer
	lister       cache.GenericLister
	registration cache.ResourceEventHandlerRegistration
}

func newMemberWatches(typ Type, enqueue func(reconcile.Request), syncLimit time.Duration, written *lastWrites, syncing *syncing) *memberWatches {
	return &memberWatches{typ: typ, enqueue: enqueue, syncLimit: syncLimit, written: written, syncing: syncing, byCluster: map[string]*memberWatch{}}
}

// lister returns a lister of the managed copies in member, starting the
// informer the first time and waiting (bounded) until it has synced.
func (w *memberWatches) lister(ctx context.Context, member *clustercache.Member) (cache.GenericLister, error) {
	if w == nil {
		return nil, nil // an applier without informers (Preview) reads the member
	}
	mw, err := w.watch(member)
	if err != nil {
		return nil, err
	}
	if mw.registration.HasSynced() {
		return mw.lister, nil
	}
	// Wait for the first list, but give up at once when the member refuses
	// it (no right, or a kind it does not serve): waiting would not help.
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, w.syncLimit, true, func(context.Context) (bool, error) {
		if mw.registration.HasSynced() {
			return true, nil
		}
		if e := member.Breaker.Err(); e != nil {
			return false, e // the member hangs: its list will not come soon
		}
		if e := mw.listError(); e != nil && (apierrors.IsForbidden(e) || apierrors.IsNotFound(e) || apierrors.IsUnauthorized(e)) {
			return false, e
		}
		return false, nil
	})
	if err != nil {
		if last := mw.listError(); last != nil {
			err = last
		}
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("listing %s in cluster %s: %w; the member does not serve this kind, or the host's identity there "+
				"may not list it: install the kind in the member, then run 'fedwarden join %s' again", w.typ.TargetResource.Resource, member.Name, err, member.Name)
		}
		return nil, fmt.Errorf("listing %s in cluster %s: %w", w.typ.TargetResource.Resource, member.Name, err)
	}
	return mw.lister, nil
}

// cached tells whether the informer of cluster, if one already runs and
// has synced, holds the managed copy key (namespace/name, or name). It
// never starts an informer nor waits for one.
func (w *memberWatches) cached(cluster, key string) bool {
	w.mu.Lock()
	mw, ok := w.byCluster[cluster]
	w.mu.Unlock()
	if !ok || !mw.registration.HasSynced() {
		return false
	}
	_, err := mw.lister.Get(key)
	return err == nil
}

// noteError records err as the latest error of the informer's list or
// watch. It runs in the informer's reflector, where a panic would end the
// process.
func (mw *memberWatch) noteError(err error) { mw.lastErr.Store(&err) }

// listError is the latest error of the informer's list or watch, if any.
func (mw *memberWatch) listError() error {
	if e := mw.lastErr.Load(); e != nil {
		return *e
	}
	return nil
}

func (w *memberWatches) watch(member *clustercache.Member) (*memberWatch, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if mw, ok := w.byCluster[member.Name]; ok && mw.member == member {
		return mw, nil
	} else if ok {
		_ = mw.informer.RemoveEventHandler(mw.registration)
	}
	gi := member.Managed.ForResource(w.typ.TargetResource)
	inf := gi.Informer()
	// The transform fails once the informer runs (for another member
	// object of the same cluster): then it is already set.
	_ = inf.SetTransform(copyProjection{health: w.health}.cache)
	// Its objects are cachedCopies: a lister of the indexer, not the
	// dynamic one, which expects unstructured objects.
	mw := &memberWatch{member: member, informer: inf, lister: cache.NewGenericLister(inf.GetIndexer(), w.typ.TargetResource.GroupResource())}
	// Like the transform, this is set once per member informer.
	_ = inf.SetWatchErrorHandler(func(_ *cache.Reflector, err error) { mw.noteError(err) })
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { w.seen(member.Name, obj, false) },
		UpdateFunc: func(old, obj any) {
			if w.matters(old, obj) {
				w.seen(member.Name, obj, true)
			}
		},
		DeleteFunc: func(obj any) {
			w.noteChange(member.Name, obj)
			w.onEvent(obj)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("watching %s in cluster %s: %w", w.typ.TargetResource.Resource, member.Name, err)
	}
	member.Managed.Start(member.Context().Done())
	mw.registration = reg
	w.byCluster[member.Name] = mw
	return mw, nil
}

// onEvent enqueues the federated resource of a member copy.
func (w *memberWatches) onEvent(obj any) {
	if m, ok := named(obj); ok {
		w.enqueue(reconcile.Request{NamespacedName: w.typ.federatedKey(m.GetNamespace(), m.GetName())})
	}
}

// seen handles an added copy, or a changed one (changed): unless it only
// echoes Fedwarden's own last write, it notes when a change was seen and
// enqueues the federated resource; while that resource syncs, it decides
// when the sync ends and its writes are known.
func (w *memberWatches) seen(cluster string, obj any, changed bool) {
	m, ok := named(obj)
	if !ok {
		return
	}
	key := w.typ.federatedKey(m.GetNamespace(), m.GetName())
	at := time.Now()
	news := func() bool {
		if w.echo(cluster, obj) {
			return false
		}
		if changed {
			w.changedAt.Store(cluster+"/"+m.GetNamespace()+"/"+m.GetName(), at)
		}
		return true
	}
	if w.syncing != nil && w.syncing.hold(key, news) {
		return
	}
	if news() {
		w.enqueue(reconcile.Request{NamespacedName: key})
	}
}

// echo tells whether obj, an added or updated copy in cluster, is the
// version Fedwarden's own last write made. A deletion is never an echo.
func (w *memberWatches) echo(cluster string, obj any) bool {
	m, ok := obj.(metav1.Object)
	return ok && w.written != nil && w.written.echoes(cluster, m)
}

// noteChange records when an update or deletion of a member copy was seen.
func (w *memberWatches) noteChange(cluster string, obj any) {
	if m, ok := named(obj); ok {
		w.changedAt.Store(cluster+"/"+m.GetNamespace()+"/"+m.GetName(), time.Now())
	}
}

// takeChange returns, and forgets, when a change of the copy of
// namespace/name in cluster was seen.
func (w *memberWatches) takeChange(cluster, namespace, name string) (time.Time, bool) {
	if w == nil {
		return time.Time{}, false
	}
	v, ok := w.changedAt.LoadAndDelete(cluster + "/" + namespace + "/" + name)
	if !ok {
		return time.Time{}, false
	}
	return v.(time.Time), true
}

func named(obj any) (interface {
	GetNamespace() string
	GetName() string
}, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	return m, ok
}

// matters tells whether an update of a member copy may call for a sync:
// a change of its spec (generation), labels or annotations, of its health,
// or of its status when the type collects status; for kinds without a
// generation (ConfigMaps, Secrets…), any change. The member's own
// controllers update the status of copies often; unless that changes the
// copy's health, or status is collected, it changes nothing.
func (w *memberWatches) matters(old, obj any) bool {
	if w.typ.CollectStatus {
		return true
	}
	o, ok1 := old.(metav1.Object)
	n, ok2 := obj.(metav1.Object)
	if !ok1 || !ok2 || n.GetGeneration() == 0 {
		return true
	}
	return o.GetGeneration() != n.GetGeneration() ||
		!maps.Equal(o.GetLabels(), n.GetLabels()) ||
		!maps.Equal(o.GetAnnotations(), n.GetAnnotations()) ||
		o.GetDeletionTimestamp().IsZero() != n.GetDeletionTimestamp().IsZero() ||
		w.healthChanged(old, obj)
}

// healthChanged tells whether the copy's health differs between old and
// obj (a new reason alone is not recorded: see clusterVersion).
func (w *memberWatches) healthChanged(old, obj any) bool {
	if w.health == nil {
		return false
	}
	o, ok1 := copyOf(old)
	n, ok2 := copyOf(obj)
	if !ok1 || !ok2 {
		return false
	}
	return w.health.Evaluate(o).Health != w.health.Evaluate(n).Health
}

// partial tells whether obj, a copy from the informer, lacks fields the
// kind's spec.healthRules may read (see copyProjection.partial).
func (w *memberWatches) partial(obj *unstructured.Unstructured) bool {
	return w != nil && copyProjection{health: w.health}.partial(obj)
}

// stop removes the event handlers; the informers end with their members.
func (w *memberWatches) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, mw := range w.byCluster {
		_ = mw.informer.RemoveEventHandler(mw.registration)
		delete(w.byCluster, name)
	}
}

// federatedKey returns the federated resource of the member copy
// namespace/name.
func (t Type) federatedKey(namespace, name string) types.NamespacedName {
	switch {
	case t.IsNamespace():
		return types.NamespacedName{Namespace: name, Name: name}
	case t.FederatedNamespaced:
		return types.NamespacedName{Namespace: namespace, Name: name}
	default:
		return types.NamespacedName{Name: name}
	}
}
