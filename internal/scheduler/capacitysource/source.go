package capacitysource

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// boundPods selects the pods that hold room on a node.
const boundPods = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"

// Options tune a Source.
type Options struct {
	// OnChange, when set, is called with a cluster's name once its
	// informers have synced, and after its Nodes or ResourceQuotas change
	// (not its Pods, which change all the time). It must not block.
	OnChange func(cluster string)
	// Debounce gathers the changes of one cluster: OnChange is called
	// Debounce after the first change of a burst, once for the changes
	// until then. 0 calls it at every change.
	Debounce time.Duration
}

// Source tells the free room of member clusters from their Nodes, Pods and
// ResourceQuotas, which it watches from the first time it is asked about a
// cluster. It is safe for concurrent use.
type Source struct {
	clusters *clustercache.Cache
	opts     Options

	mu      sync.Mutex
	watches map[string]*watch
}

// New returns a Source that reaches the members through clusters.
func New(clusters *clustercache.Cache, opts Options) *Source {
	return &Source{clusters: clusters, opts: opts, watches: map[string]*watch{}}
}

// Capacity is the cluster's free room for pods of namespace; nil while the
// cluster is not connected or its informers have not synced. Free is nil
// when the cluster has no Node objects. The first
// call for a cluster, or for a member whose clients were rebuilt, starts
// the informers in the background.
func (s *Source) Capacity(cluster, namespace string, own labels.Selector) *framework.Capacity {
	w := s.watch(cluster)
	if w == nil || !w.synced.Load() {
		return nil
	}
	quotas, err := w.quotas(namespace)
	if err != nil {
		return nil
	}
	c := &framework.Capacity{QuotaFree: quotaFree(quotas)}
	if len(w.nodes.GetStore().ListKeys()) > 0 {
		// A cluster that shows no Node at all (a bare API server, or
		// Nodes run by a provider out of sight) is not measured by its
		// Nodes; its quotas still count.
		c.Free = w.free()
	}
	if held := w.held(namespace, own); len(held) > 0 {
		addHeld(c.Free, held)
		addHeld(c.QuotaFree, held)
	}
	return c
}

// held sums the requests of the pods of namespace that own selects, bound
// to a Ready, schedulable node and not finished: the room the workload's
// own pods hold, which free() subtracted.
func (w *watch) held(namespace string, own labels.Selector) corev1.ResourceList {
	if own == nil || own.Empty() {
		return nil
	}
	objs, err := w.pods.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	sum := corev1.ResourceList{}
	for _, p := range listOf[*corev1.Pod](objs) {
		if finished(p) || !own.Matches(labels.Set(p.Labels)) {
			continue
		}
		if node, ok, _ := w.nodes.GetStore().GetByKey(p.Spec.NodeName); ok && schedulable(node.(*corev1.Node)) {
			add(sum, podRequests(p), 1)
		}
	}
	return sum
}

// addHeld adds the held room to the resources room already counts.
func addHeld(room, held corev1.ResourceList) {
	for name, q := range room {
		if h, ok := held[name]; ok {
			q.Add(h)
			room[name] = q
		}
	}
}

// Forget stops watching the cluster; a later Capacity starts again.
func (s *Source) Forget(cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.watches[cluster]; ok {
		w.cancel()
		delete(s.watches, cluster)
	}
}

// watch returns the cluster's watch, started for its current Member; nil
// when the cluster is not connected.
func (s *Source) watch(cluster string) *watch {
	member, err := s.clusters.Get(cluster)
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watches[cluster]
	if w != nil && w.member == member && w.ctx.Err() == nil {
		return w
	}
	if w != nil {
		w.cancel()
		delete(s.watches, cluster)
	}
	if err != nil {
		return nil
	}
	w, err = startWatch(member, s.onChange(cluster), s.opts.Debounce)
	if err != nil {
		return nil
	}
	s.watches[cluster] = w
	return w
}

// onChange returns OnChange for cluster.
func (s *Source) onChange(cluster string) func() {
	if s.opts.OnChange == nil {
		return func() {}
	}
	return func() { s.opts.OnChange(cluster) }
}

// watch holds the informers of one Member and the free room last computed
// from them.
type watch struct {
	member *clustercache.Member
	ctx    context.Context
	cancel context.CancelFunc

	nodes, pods, quotaInf cache.SharedIndexInformer
	changed               *debouncer
	synced                atomic.Bool
	dirty                 atomic.Bool

	mu   sync.Mutex
	room corev1.ResourceList
}

// startWatch starts informers on member's Nodes, bound Pods and
// ResourceQuotas; they stop with the member's context, or with cancel.
// onChange is debounced by debounce.
func startWatch(member *clustercache.Member, onChange func(), debounce time.Duration) (*watch, error) {
	ctx, cancel := context.WithCancel(member.Context())
	w := &watch{member: member, ctx: ctx, cancel: cancel, changed: &debouncer{fn: onChange, delay: debounce, ctx: ctx}}
	w.dirty.Store(true)
	all := informers.NewSharedInformerFactoryWithOptions(member.Kube, 0, informers.WithTransform(trim))
	bound := informers.NewSharedInformerFactoryWithOptions(member.Kube, 0, informers.WithTransform(trim),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = boundPods }))
	w.nodes = all.Core().V1().Nodes().Informer()
	w.quotaInf = all.Core().V1().ResourceQuotas().Informer()
	w.pods = bound.Core().V1().Pods().Informer()
	var synced []cache.InformerSynced
	for _, h := range []struct {
		inf          cache.SharedIndexInformer
		room, notify bool
	}{{w.nodes, true, true}, {w.pods, true, false}, {w.quotaInf, false, true}} {
		reg, err := h.inf.AddEventHandler(w.handler(h.room, h.notify))
		if err != nil {
			cancel()
			return nil, err
		}
		synced = append(synced, reg.HasSynced)
	}
	all.Start(ctx.Done())
	bound.Start(ctx.Done())
	go w.waitForSync(synced)
	return w, nil
}

// handler marks the free room stale (room) and calls OnChange (notify)
// when an object comes, goes or changes, except for the initial list.
func (w *watch) handler(room, notify bool) cache.ResourceEventHandler {
	changed := func(initial bool) {
		if room {
			w.dirty.Store(true)
		}
		if notify && !initial {
			w.changed.call()
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) { changed(initial) },
		UpdateFunc: func(old, cur any) {
			if !sameContent(old, cur) {
				changed(false)
			}
		},
		DeleteFunc: func(any) { changed(false) },
	}
}

// waitForSync marks the watch synced once every handler has seen the
// initial list, and tells OnChange that the capacity is now known.
func (w *watch) waitForSync(synced []cache.InformerSynced) {
	err := wait.PollUntilContextCancel(w.ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, s := range synced {
			if !s() {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return
	}
	w.synced.Store(true)
	w.changed.call()
}

// free returns the free room, computed again only after a Node or Pod
// event.
func (w *watch) free() corev1.ResourceList {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirty.Swap(false) {
		w.room = freeRoom(listOf[*corev1.Node](w.nodes.GetStore().List()), listOf[*corev1.Pod](w.pods.GetStore().List()))
	}
	return w.room.DeepCopy()
}

// quotas returns the ResourceQuotas of namespace.
func (w *watch) quotas(namespace string) ([]*corev1.ResourceQuota, error) {
	objs, err := w.quotaInf.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, fmt.Errorf("listing ResourceQuotas of %s: %w", namespace, err)
	}
	return listOf[*corev1.ResourceQuota](objs), nil
}

func listOf[T any](objs []any) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// debouncer calls fn at most once per delay, delay after the first call of
// a burst, for every call until then; with no delay, at every call. It
// stops calling fn once ctx ends. Firing at the end of a window, rather
// than after a quiet spell, means that a steady stream of changes cannot
// put the call off forever.
type debouncer struct {
	fn    func()
	delay time.Duration
	ctx   context.Context

	mu    sync.Mutex
	armed bool
}

func (d *debouncer) call() {
	if d.delay <= 0 {
		d.fire()
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.armed {
		d.armed = true
		time.AfterFunc(d.delay, d.fire)
	}
}

func (d *debouncer) fire() {
	d.mu.Lock()
	d.armed = false
	d.mu.Unlock()
	if d.ctx.Err() == nil {
		d.fn()
	}
}
