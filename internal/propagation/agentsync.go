package propagation

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
)

// agentSide is what a Reconciler running in a Pull cluster's agent knows:
// its cluster, the clients of that cluster, and the field manager of its
// CPV entries. The agent syncs with the same code as the host (syncCluster,
// drift detection, remediation), for one cluster, and writes only its own
// entry of each CPV.
type agentSide struct {
	cluster      string
	member       *clustercache.Member
	fieldManager string
}

// reconcileAgent syncs fed, when its CPV places it on the agent's cluster,
// to that cluster; when it is not placed there (any more) or is being
// deleted, it deletes the copy and the agent's entry.
func (r *Reconciler) reconcileAgent(ctx context.Context, fed *unstructured.Unstructured) (reconcile.Result, error) {
	name := r.agent.cluster
	// The agent's cache holds only the CPVs placed on its cluster: an
	// absent one means the resource is not placed here, or not yet.
	cpv, err := r.getCPV(ctx, fed)
	if err != nil {
		return reconcile.Result{}, err
	}
	placed := slices.ContainsFunc(cpv.Spec.Clusters, func(pc typesv1beta1.PlacedCluster) bool { return string(pc.Name) == name })
	if !fed.GetDeletionTimestamp().IsZero() || !placed {
		return reconcile.Result{}, r.agentRemove(ctx, fed, cpv)
	}
	spec, err := parseSpec(fed)
	if err != nil {
		return reconcile.Result{}, reconcile.TerminalError(err)
	}
	in := newSyncInput(fed, spec, cpv, targetsOf(cpv))
	prev, recorded := in.previous[name]
	in.force = in.resync != "" && in.resync != prev.Resync
	res := r.syncCluster(ctx, in, name, nil)
	r.recordDrift(fed, in, []clusterResult{res})
	r.drifted.set(client.ObjectKeyFromObject(fed), []clusterResult{res})
	cv := clusterVersion(prev, res, in.v, metav1.NewTime(r.now()))
	cv.Resync = prev.Resync
	if in.resync != "" && (res.written || res.state == typesv1beta1.InSync) {
		cv.Resync = in.resync
	}
	if !recorded || !equality.Semantic.DeepEqual(prev, cv) {
		if err := r.applyOwnEntry(ctx, client.ObjectKeyFromObject(cpv), &cv); err != nil {
			return reconcile.Result{}, err
		}
	}
	if res.retry {
		return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: jittered(r.opts.ResyncPeriod)}, nil
}

// targetsOf is the scheduler's decision as the CPV records it.
func targetsOf(cpv *typesv1beta1.ClusterPropagatedVersion) targets {
	t := targets{replicas: map[string]int32{}}
	for _, pc := range cpv.Spec.Clusters {
		t.names = append(t.names, string(pc.Name))
		if pc.Replicas != nil {
			t.replicas[string(pc.Name)] = *pc.Replicas
		}
	}
	return t
}

// agentRemove deletes the agent's copy of fed (unless fed is deleted with
// its copies orphaned), then the agent's CPV entry, which lets the host
// finish the removal.
func (r *Reconciler) agentRemove(ctx context.Context, fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion) error {
	name := r.agent.cluster
	orphan := !fed.GetDeletionTimestamp().IsZero() && fed.GetAnnotations()[typesv1beta1.AnnotationOrphan] == "true"
	had, err := r.hasManagedCopy(ctx, fed)
	if err != nil {
		return err
	}
	if had && !orphan {
		if done, failed := r.deleteCopy(ctx, fed, name, nil); !done {
			return fmt.Errorf("deleting the copy of %s %s: %s", r.typ.Federated.Kind, client.ObjectKeyFromObject(fed), failed.message)
		}
	}
	_, recorded := entryOf(cpv, name)
	if !had && !recorded {
		return nil // nothing here, nothing reported: nothing to write
	}
	err = r.applyOwnEntry(ctx, r.cpvKey(fed), nil)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// hasManagedCopy tells whether the agent's cluster holds a managed copy of
// fed, as its informer sees it.
func (r *Reconciler) hasManagedCopy(ctx context.Context, fed *unstructured.Unstructured) (bool, error) {
	lister, err := r.watches.lister(ctx, r.agent.member)
	if apierrors.IsNotFound(err) {
		return false, nil // the cluster does not serve the kind
	}
	if err != nil {
		return false, err
	}
	key := fed.GetName()
	if r.typ.TargetNamespaced && fed.GetNamespace() != "" {
		key = fed.GetNamespace() + "/" + key
	}
	_, err = lister.Get(key)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// applyOwnEntry writes the agent's entry of the CPV key (removes it when
// cv is nil) with server-side apply as the agent's field manager, which
// owns nothing else.
func (r *Reconciler) applyOwnEntry(ctx context.Context, key types.NamespacedName, cv *typesv1beta1.ClusterVersion) error {
	var st *typesv1beta1.ClusterPropagatedVersionStatus
	if cv != nil {
		st = &typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{*cv}}
	}
	applied, err := applyCPVStatus(ctx, r.client, key, st, r.agent.fieldManager)
	if err != nil {
		return fmt.Errorf("writing cluster %s's entry of ClusterPropagatedVersion %s: %w", r.agent.cluster, key, err)
	}
	r.ownWrites.record(applied)
	return nil
}

// entryOf returns cluster's entry of cpv's status.
func entryOf(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) (typesv1beta1.ClusterVersion, bool) {
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			return cv, true
		}
	}
	return typesv1beta1.ClusterVersion{}, false
}
