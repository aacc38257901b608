package hostcache

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/jsonobject"
)

// LastApplied is the annotation in which kubectl apply keeps a copy of the
// whole object it applied.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// ShutdownTimeout is how long the manager of a controller-manager or an
// agent waits, once stopped, for its runnables, host caches included,
// before it exits anyway (controller-runtime's GracefulShutdownTimeout,
// 30 s by default). After a long outage of an API server, an informer of
// client-go v0.37.2 may be sitting out a watch-list retry backoff (up to
// a minute), which it does not cut short when stopped; a process that
// waited for it would outlast a Pod's 30-second termination grace period
// and be killed. A stop that works finishes in about a second.
const ShutdownTimeout = 10 * time.Second

// Options are the cache options of a controller-manager whose control
// plane runs in namespace: every object trimmed and unstructured ones held
// as JSON (Hold); of Secrets and Leases, only those of that namespace (the
// members' credentials, the Pull agents' Leases).
func Options(namespace string) cache.Options {
	return cache.Options{
		DefaultTransform: Hold,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:        {Namespaces: map[string]cache.Config{namespace: {}}},
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{namespace: {}}},
		},
	}
}

// Trim drops from a cached object what no controller reads: its managed
// fields, and the last-applied configuration kubectl apply leaves, as large
// as the object itself (a Secret's holds a second copy of its token). No
// controller writes an object back from the cache with Update, which would
// remove them: its writes are patches, from a cached object to the object
// it wants, which leave what both lack alone.
func Trim(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return obj, err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return obj, nil // a tombstone
	}
	if annotations := m.GetAnnotations(); annotations[LastApplied] != "" {
		delete(annotations, LastApplied)
		if len(annotations) == 0 {
			annotations = nil // as the API server leaves an object without any
		}
		m.SetAnnotations(annotations)
	}
	return obj, nil
}

// Hold is the host cache's transform: Trim, and an unstructured object (a
// federated resource) held as JSON. Held as unstructured maps, the
// federated resources were most of what the controller-manager keeps of
// the host, about 14 KB each at the bulk benchmark's size (bench/RESULTS.md,
// "Federated resources held as JSON"). An object held already is left as
// it is.
func Hold(obj any) (any, error) {
	obj, err := Trim(obj)
	if err != nil {
		return obj, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	o, err := jsonobject.New(u)
	if err != nil {
		return nil, err
	}
	return &held{Object: *o}, nil
}

// held is an unstructured object as the host cache holds it. Event
// handlers get it as it is, a client.Object whose metadata answers them
// without a decode. Readers never see it: controller-runtime's cache reader
// copies what it returns from a Get or a List with DeepCopyObject and
// assigns the copy to the caller's object, and a held object's copy is the
// object decoded, an *unstructured.Unstructured the caller owns. A List
// with client.UnsafeDisableDeepCopy, which takes no copy, fails on held
// objects: use Keys for names.
type held struct{ jsonobject.Object }

// DeepCopyObject decodes the object.
func (h *held) DeepCopyObject() runtime.Object {
	u, err := h.Decode()
	if err != nil {
		// JSON this cache encoded: it does not fail to decode. An empty
		// object in its place would read as a resource placed nowhere.
		panic(fmt.Sprintf("the host cache: %v", err))
	}
	return u
}

// Informers is the part of a controller-runtime cache Keys reads.
type Informers interface {
	GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error)
}

// Keys returns the namespace and name of every object of obj's kind the
// cache holds in namespace ("": in all), without decoding or copying any:
// for callers that want names only. It starts the kind's informer if it is
// not running.
func Keys(ctx context.Context, c Informers, obj client.Object, namespace string) ([]types.NamespacedName, error) {
	inf, err := c.GetInformer(ctx, obj)
	if err != nil {
		return nil, fmt.Errorf("the informer of %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the informer of %s is a %T, which has no index", obj.GetObjectKind().GroupVersionKind().Kind, inf)
	}
	keys := indexed.GetIndexer().ListKeys()
	if namespace != "" {
		// The namespace index every controller-runtime informer has.
		if keys, err = indexed.GetIndexer().IndexKeys(toolscache.NamespaceIndex, namespace); err != nil {
			return nil, fmt.Errorf("the %s in namespace %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, namespace, err)
		}
	}
	out := make([]types.NamespacedName, 0, len(keys))
	for _, key := range keys {
		namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
		if err != nil {
			return nil, err
		}
		out = append(out, types.NamespacedName{Namespace: namespace, Name: name})
	}
	return out, nil
}
