package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/jsonobject"
)

// cachedCopy is how the member informers hold a copy: the copy as
// copyProjection leaves it, as compact JSON beside the metadata the
// informers' event handlers read. A copy decoded into unstructured maps
// takes several times its JSON (BenchmarkCachedCopySize: a Go map of up to
// eight entries takes about 300 bytes, whatever it holds), and the member
// copies are most of the controller's memory (bench/RESULTS.md, the memory
// model). A sync decodes the copy it reads (copyOf), which is then its own
// to change.
type cachedCopy = jsonobject.Object

// compact returns u, which it takes over, as a cachedCopy.
func compact(u *unstructured.Unstructured) (*cachedCopy, error) { return jsonobject.New(u) }

// copyOf is the copy obj, an object of a member informer, holds, decoded:
// false when obj is no copy (a tombstone), or cannot be decoded.
func copyOf(obj any) (*unstructured.Unstructured, bool) {
	switch o := obj.(type) {
	case *cachedCopy:
		u, err := o.Decode()
		return u, err == nil
	case *unstructured.Unstructured:
		return o, true
	}
	return nil, false
}
