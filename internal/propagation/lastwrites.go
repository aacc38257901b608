package propagation

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// lastWrites remembers, per member object, the content hash Fedwarden last
// wrote and the resourceVersion the member answered with. A sync that finds
// an older copy in the informer than the one it wrote itself reads the
// member instead of writing the same content again: after a member restart,
// the informer may still be listing while the first catch-up write is done.
type lastWrites struct {
	m sync.Map // key → lastWrite
}

type lastWrite struct {
	hash, resourceVersion string
}

func writeKey(cluster string, obj metav1.Object) string {
	return cluster + "/" + obj.GetNamespace() + "/" + obj.GetName()
}

// record notes that hash was written as obj to cluster.
func (w *lastWrites) record(cluster string, obj *unstructured.Unstructured, hash string) {
	w.m.Store(writeKey(cluster, obj), lastWrite{hash: hash, resourceVersion: obj.GetResourceVersion()})
}

// forget drops what is known of obj in cluster.
func (w *lastWrites) forget(cluster string, obj *unstructured.Unstructured) {
	w.m.Delete(writeKey(cluster, obj))
}

// lagging tells whether cached, the informer's copy, may be older than the
// last write of hash to it.
func (w *lastWrites) lagging(cluster string, cached *unstructured.Unstructured, hash string) bool {
	v, ok := w.m.Load(writeKey(cluster, cached))
	if !ok {
		return false
	}
	last := v.(lastWrite)
	return last.hash == hash && last.resourceVersion != cached.GetResourceVersion()
}

// echoes tells whether obj, as a member informer sees it, is the very
// version Fedwarden last wrote to cluster: its own write coming back, which
// holds nothing a sync would not already know.
func (w *lastWrites) echoes(cluster string, obj metav1.Object) bool {
	v, ok := w.m.Load(writeKey(cluster, obj))
	return ok && v.(lastWrite).resourceVersion == obj.GetResourceVersion()
}
