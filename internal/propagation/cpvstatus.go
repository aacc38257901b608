package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// cpvStatus returns the ClusterPropagatedVersion status after a sync:
// the current versions and an entry per cluster in results. resync is the
// kubefed.io/resync value the sync acted on, if it did.
func cpvStatus(old typesv1beta1.ClusterPropagatedVersionStatus, v render.Versions, placed int, results []clusterResult, resync string, generation int64, now metav1.Time) typesv1beta1.ClusterPropagatedVersionStatus {
	st := typesv1beta1.ClusterPropagatedVersionStatus{
		TemplateVersion: v.Template, OverrideVersion: v.Override,
		TemplateHash: v.TemplateHash, OverrideHash: v.OverrideHash,
		Conditions: slices.Clone(old.Conditions),
	}
	previous := map[string]typesv1beta1.ClusterVersion{}
	for _, cv := range old.ClusterVersions {
		previous[string(cv.ClusterName)] = cv
	}
	drifted, healthy := int32(0), int32(0)
	for _, res := range results {
		if res.fromAgent && res.entry == nil || res.waiting {
			continue // nothing reported, or written, yet
		}
		cv := clusterVersion(previous[res.name], res, v, resync, now)
		if cv.State != typesv1beta1.InSync && cv.State != typesv1beta1.RolloutPending {
			drifted++
		}
		if cv.Health == corev1beta1.HealthHealthy {
			healthy++
		}
		st.ClusterVersions = append(st.ClusterVersions, cv)
	}
	slices.SortFunc(st.ClusterVersions, func(a, b typesv1beta1.ClusterVersion) int {
		return strings.Compare(string(a.ClusterName), string(b.ClusterName))
	})
	st.ClusterCount = new(int32(placed))
	st.DriftedClusters = new(drifted)
	st.HealthyClusters = new(healthy)
	reason, message := propagatedReason(placed, results)
	setCondition(&st.Conditions, typesv1beta1.CPVPropagated, reason == typesv1beta1.ReasonPropagated || reason == typesv1beta1.ReasonNoClusters, reason, message, generation, now)
	if drifted > 0 {
		setCondition(&st.Conditions, typesv1beta1.CPVDrifted, true, typesv1beta1.ReasonClustersDrifted, listNotInSync(results), generation, now)
	} else {
		setCondition(&st.Conditions, typesv1beta1.CPVDrifted, false, typesv1beta1.ReasonAllInSync, "every cluster has the current versions", generation, now)
	}
	return st
}

// clusterVersion is the CPV entry of one cluster, its drift ledger
// included; resync is the kubefed.io/resync value the sync acted on, if it
// did.
func clusterVersion(prev typesv1beta1.ClusterVersion, res clusterResult, v render.Versions, resync string, now metav1.Time) typesv1beta1.ClusterVersion {
	if res.fromAgent && res.entry != nil {
		return *res.entry // the agent's to write
	}
	if res.held != nil {
		v = *res.held // the earlier revision a rollout holds the cluster at
	}
	cv := typesv1beta1.ClusterVersion{
		ClusterName:     typesv1beta1.ClusterName(res.name),
		State:           res.state,
		Message:         bounded(res.message, 1024),
		Version:         prev.Version,
		TemplateVersion: prev.TemplateVersion, OverrideVersion: prev.OverrideVersion,
		ObservedGeneration: prev.ObservedGeneration,
		Remediation:        res.remediation,
		DriftHistory:       prev.DriftHistory,
		TargetRevision:     res.target,
	}
	if ep, ended := endedEpisode(prev, res, v, resync, now); ended {
		cv.DriftHistory = withEpisode(prev.DriftHistory, ep)
	}
	if res.decided && res.decision.Waiver != nil && res.state == typesv1beta1.Waived {
		cv.WaivedUntil = &metav1.Time{Time: res.decision.Waiver.Expires}
	}
	cv.Waiver = episodeWaiver(prev, res, now)
	if len(res.changes) > 0 {
		var managers []string
		cv.ChangedPaths, managers = drift.Paths(res.changes)
		cv.ChangedBy = bounded10(managers)
		cv.ChangedByOperations = bounded10(drift.Operations(res.changes))
	}
	if res.health != nil {
		cv.Health, cv.HealthReason, cv.HealthMessage = res.health.Health, bounded(res.health.Reason, 64), bounded(res.health.Message, 256)
		if prev.Health == res.health.Health {
			// The reason and message say why the copy became this health:
			// a Deployment's replica counts move its message at every
			// status update of its controller, which is no reason to
			// write the CPV.
			cv.HealthReason, cv.HealthMessage = prev.HealthReason, prev.HealthMessage
		}
	}
	if res.object != nil {
		// The resourceVersion is recorded when Fedwarden wrote the copy or
		// its spec changed (a new generation), not for each status update
		// the member's own controllers make, which would rewrite the CPV
		// every time a Deployment's replica counts move. A kind without
		// generations (ConfigMap, Secret) has no such status: each of its
		// resourceVersions is a write, recorded even when this sync did not
		// make it (the status write of the sync that did was lost to a host
		// that was down, or undone by one that read a stale CPV).
		gen := res.object.GetGeneration()
		if res.written || prev.Version == "" || prev.ObservedGeneration != gen || gen == 0 {
			cv.Version = res.object.GetResourceVersion()
		}
		cv.ObservedGeneration = gen
		a := res.object.GetAnnotations()
		cv.TemplateVersion = typesv1beta1.Version(a[typesv1beta1.AnnotationTemplateVersion])
		cv.OverrideVersion = typesv1beta1.Version(a[typesv1beta1.AnnotationOverrideVersion])
	}
	if res.state == typesv1beta1.InSync {
		// The copy's content is that of the current versions, even when it
		// was written at an earlier override version that did not change
		// this cluster's part.
		cv.TemplateVersion, cv.OverrideVersion = v.Template, v.Override
		if res.held != nil {
			cv.State = typesv1beta1.RolloutPending
		}
		return cv
	}
	cv.DriftedSince = prev.DriftedSince
	if cv.DriftedSince == nil || prev.State == typesv1beta1.InSync {
		cv.DriftedSince = &now
	}
	return cv
}

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

// ownWrites remembers, per CPV, the resourceVersions of the last few
// writes this process made, so that the watch events of its own writes are
// not taken for someone else's (an agent's) change, and a cache that has
// not seen the last of them yet is noticed (behind).
type ownWrites struct {
	mu sync.Mutex
	m  map[types.NamespacedName][]string
}

// removeLeftEntries removes from the CPV applied the entries that no apply
// of the host's can remove, as another field manager owns them too: those
// of clusters that have left the federation (joined does not have them),
// which their agents wrote, and those of clusters the host writes itself
// that the sync reported nothing of (reported is false): an entry a Pull
// cluster's agent, or a controller-manager replica, wrote before the host
// took the cluster over, or one of a cluster whose copy the host removed
// while replicas share the clusters (each entry then has its cluster's
// field manager).
func (s *cpvStore) removeLeftEntries(ctx context.Context, applied *unstructured.Unstructured, joined clusterSet, reported func(cluster string) bool) error {
	stale := func(name string) bool {
		fc, ok := joined[name]
		return !ok || (!isPull(fc) && !reported(name))
	}
	if err := s.removeEntries(ctx, applied, stale); err != nil {
		return fmt.Errorf("removing the entries of clusters that left, or that the host took over, from ClusterPropagatedVersion %s: %w", client.ObjectKeyFromObject(applied), err)
	}
	return nil
}

// removeEntries removes from the CPV applied, with a JSON patch, the
// entries of the clusters remove names, each guarded by a test of the
// entry's cluster name; it writes nothing when there are none.
func (s *cpvStore) removeEntries(ctx context.Context, applied *unstructured.Unstructured, remove func(cluster string) bool) error {
	entries, _, _ := unstructured.NestedSlice(applied.Object, "status", "clusterVersions")
	var ops []map[string]any
	for i := len(entries) - 1; i >= 0; i-- {
		e, _ := entries[i].(map[string]any)
		name, _ := e["clusterName"].(string)
		if !remove(name) {
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
		return fmt.Errorf("encoding the removal of entries: %w", err)
	}
	if err := s.client.Status().Patch(ctx, applied, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		return err
	}
	s.own.record(applied)
	return nil
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

// behind reports whether rv, the resourceVersion of the CPV key in a cache
// ("" when the cache has none), is older than this process's last write of
// it: the cache has not seen that write yet. Resource versions are
// compared as Kubernetes allows since 1.35 (KEP-5504); one that is not a
// well-formed integer is never taken for older.
func (w *ownWrites) behind(key types.NamespacedName, rv string) bool {
	w.mu.Lock()
	rvs := w.m[key]
	w.mu.Unlock()
	if len(rvs) == 0 {
		return false
	}
	if rv == "" {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(rv, rvs[len(rvs)-1])
	return err == nil && c < 0
}

// forget drops what is kept of the CPV key.
func (w *ownWrites) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}
