package hostcache

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LastApplied is the annotation in which kubectl apply keeps a copy of the
// whole object it applied.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Options are the cache options of a controller-manager whose control
// plane runs in namespace: every object trimmed (Trim); of Secrets and
// Leases, only those of that namespace (the members' credentials, the Pull
// agents' Leases).
func Options(namespace string) cache.Options {
	return cache.Options{
		DefaultTransform: Trim,
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
