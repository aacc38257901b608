package console

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// watched is one informer of a view: a kind listed and watched with the
// view's identity, and the last error the API server gave the listing, so
// that a page can say why it shows nothing.
type watched struct {
	// what names the objects for messages: "ClusterPropagatedVersions in all namespaces".
	what string
	// resource and namespace (all when empty) are what the identity lists.
	resource  schema.GroupResource
	namespace string
	informer  toolscache.SharedIndexInformer
	// handlers are the informer's event handlers: the index is complete
	// only once each has been given the first list, which the informer's
	// own HasSynced does not wait for.
	handlers []toolscache.ResourceEventHandlerRegistration

	mu  sync.Mutex
	err error
}

// newWatched returns an informer of the kind of list, resource, in
// namespace (all when empty), through c. Objects lose their managedFields
// on the way in, and each one cached counts against limit.
func newWatched(c client.WithWatch, list client.ObjectList, example runtime.Object, resource schema.GroupResource, namespace, what string,
	limit *objectLimit) (*watched, error) {
	w := &watched{what: what, resource: resource, namespace: namespace}
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			err := c.List(ctx, l, &client.ListOptions{Namespace: namespace, Raw: &opts})
			w.setErr(err)
			return l, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			wi, err := c.Watch(ctx, l, &client.ListOptions{Namespace: namespace, Raw: &opts})
			if err != nil {
				w.setErr(err)
			}
			return wi, err
		},
	}
	w.informer = toolscache.NewSharedIndexInformerWithOptions(lw, example, toolscache.SharedIndexInformerOptions{})
	_ = w.informer.SetTransform(stripManagedFields)
	// The error is shown on the pages that need the objects, not logged:
	// a user without the rights would fill the log.
	_ = w.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		w.setErr(err)
	})
	if err := w.handle(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { limit.add(1) },
		DeleteFunc: func(any) { limit.add(-1) },
	}); err != nil {
		return nil, err
	}
	return w, nil
}

// handle adds an event handler, which synced then waits for.
func (w *watched) handle(h toolscache.ResourceEventHandler) error {
	reg, err := w.informer.AddEventHandler(h)
	if err != nil {
		return err
	}
	w.handlers = append(w.handlers, reg)
	return nil
}

func (w *watched) setErr(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.err = err
}

// problem says why the objects cannot be shown: the identity may not
// list them, or the host refused otherwise; "" when the list worked.
func (w *watched) problem() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.err == nil:
		return ""
	case apierrors.IsForbidden(w.err):
		return "you may not list " + w.what + ": " + w.err.Error()
	default:
		return "listing " + w.what + ": " + w.err.Error()
	}
}

// unauthorized tells whether the host no longer accepts the identity's
// credentials (an expired or revoked token).
func (w *watched) unauthorized() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return apierrors.IsUnauthorized(w.err)
}

// forbiddenSinceListed tells whether the host refuses the identity the
// objects it listed before: its cache holds what it may no longer read.
// A kind the identity was never allowed to list holds nothing.
func (w *watched) forbiddenSinceListed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return apierrors.IsForbidden(w.err) && w.informer.HasSynced()
}

// synced tells whether the informer has listed once and every handler
// has been given that list.
func (w *watched) synced() bool {
	if !w.informer.HasSynced() {
		return false
	}
	for _, h := range w.handlers {
		if !h.HasSynced() {
			return false
		}
	}
	return true
}

// stripManagedFields drops what the console never shows, to keep the
// caches small: managed fields, the last-applied configuration, and a
// CPV's conditions (its per-cluster entries say more).
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
		if a := m.GetAnnotations(); a != nil {
			delete(a, "kubectl.kubernetes.io/last-applied-configuration")
		}
	}
	if cpv, ok := obj.(*typesv1beta1.ClusterPropagatedVersion); ok {
		cpv.Status.Conditions = nil
	}
	return obj, nil
}

// errTooManyObjects: an identity may see more objects than the console
// caches for one identity.
var errTooManyObjects = errors.New("too many objects to cache")

// objectLimit counts the objects one view caches, over all its kinds, and
// calls full once when they exceed max.
type objectLimit struct {
	max  int64
	n    atomic.Int64
	once sync.Once
	full func()
}

func (l *objectLimit) add(d int64) {
	if l.n.Add(d) > l.max {
		l.once.Do(l.full)
	}
}

// tooMany is the error of an identity that sees more than max objects,
// with what to do about it.
func tooMany(max int64) error {
	return fmt.Errorf("%w: you may see more than %d objects (ClusterPropagatedVersions, FederatedClusters and the agents' Leases), "+
		"the most the console caches for one identity (--max-objects-per-identity); ask its operator to raise that limit", errTooManyObjects, max)
}
