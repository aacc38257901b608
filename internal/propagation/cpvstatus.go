package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// applyCPVStatus writes st as the status of the CPV key with server-side
// apply, as manager: the fields st sets become the manager's, and those it
// owned and st omits are removed. Each entry of clusterVersions is owned by
// whoever applies it, so the host and every Pull cluster's agent write their
// own entries without overwriting the others'. It returns the CPV as
// written.
func applyCPVStatus(ctx context.Context, c client.Client, key types.NamespacedName, st *typesv1beta1.ClusterPropagatedVersionStatus, manager string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("ClusterPropagatedVersion"))
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	if st != nil {
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(st)
		if err != nil {
			return nil, fmt.Errorf("encoding the status: %w", err)
		}
		u.Object["status"] = raw
	}
	err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
	return u, err
}

// removeLeftEntries removes from the CPV applied the entries of clusters
// that have left the federation (joined does not have them): entries their
// agents wrote, which no apply of the host's can remove. Each removal is
// guarded by a test of the entry's cluster name.
func (r *Reconciler) removeLeftEntries(ctx context.Context, applied *unstructured.Unstructured, joined clusterSet) error {
	entries, _, _ := unstructured.NestedSlice(applied.Object, "status", "clusterVersions")
	var ops []map[string]any
	for i := len(entries) - 1; i >= 0; i-- {
		e, _ := entries[i].(map[string]any)
		name, _ := e["clusterName"].(string)
		if _, ok := joined[name]; ok {
			continue
		}
		path := fmt.Sprintf("/status/clusterVersions/%d", i)
		ops = append(ops, map[string]any{"op": "test", "path": path + "/clusterName", "value": name}, map[string]any{"op": "remove", "path": path})
	}
	if len(ops) == 0 {
		return nil
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the removal of left clusters' entries: %w", err)
	}
	if err := r.client.Status().Patch(ctx, applied, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return fmt.Errorf("removing the entries of clusters that left from ClusterPropagatedVersion %s: %w", client.ObjectKeyFromObject(applied), err)
	}
	r.ownWrites.record(applied)
	return nil
}

// ownWrites remembers, per CPV, the resourceVersions of the last few
// writes this process made, so that the watch events of its own writes are
// not taken for someone else's (an agent's) change.
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName][]string
}

// recentWrites is how many resourceVersions are kept per CPV: a sync writes
// a CPV at most twice (spec, then status).
const recentWrites = 4

// record notes obj's resourceVersion as written by this process.
func (w *ownWrites) record(obj client.Object) {
	if obj == nil || obj.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[types.NamespacedName][]string{}
	}
	key := client.ObjectKeyFromObject(obj)
	rvs := append(w.m[key], obj.GetResourceVersion())
	if len(rvs) > recentWrites {
		rvs = rvs[len(rvs)-recentWrites:]
	}
	w.m[key] = rvs
}

// mine tells whether obj is, as far as is known, what this process wrote.
func (w *ownWrites) mine(obj client.Object) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Contains(w.m[client.ObjectKeyFromObject(obj)], obj.GetResourceVersion())
}

// forget drops what is kept of the CPV key.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
