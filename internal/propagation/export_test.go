package propagation

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// CachedCopy returns, decoded, what c's informer of cluster holds of
// the managed copy key (namespace/name, or name): what a sync reads of it.
// It is for the package's integration tests, which see no further inside.
func (c *Controller) CachedCopy(cluster, key string) (*unstructured.Unstructured, bool) {
	w := c.reconciler.apply.watches
	w.mu.Lock()
	mw, ok := w.byCluster[cluster]
	w.mu.Unlock()
	if !ok {
		return nil, false
	}
	obj, err := mw.lister.Get(key)
	if err != nil {
		return nil, false
	}
	return copyOf(obj)
}

// Projected tells whether obj, a cached copy, was cut down to what a sync
// reads (copyProjection).
func Projected(obj *unstructured.Unstructured) bool { return isProjected(obj) }
