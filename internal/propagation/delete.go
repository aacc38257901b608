package propagation

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
)

// reconcileDelete deletes every member copy, unless the resource is
// annotated to orphan them, then lets the resource go. Its report is
// deferred (reporter.deletion), so that every exit that leaves the resource
// in place says why in the Propagated condition.
func (r *Reconciler) reconcileDelete(ctx context.Context, fed *unstructured.Unstructured) (res reconcile.Result, err error) {
	if !controllerutil.ContainsFinalizer(fed, typesv1beta1.FinalizerSync) {
		return reconcile.Result{}, nil
	}
	var pending []string
	defer func() {
		if err = r.report.deletion(ctx, fed, pending, err); err != nil {
			res = reconcile.Result{}
		}
	}()
	// A resource that was never synced (see OutOfReach) has no copy of its
	// own to delete.
	refused, _ := OutOfReach(r.typ, fed)
	if fed.GetAnnotations()[typesv1beta1.AnnotationOrphan] != "true" && refused == "" {
		if pending, err = r.deleteAllCopies(ctx, fed); err != nil {
			return reconcile.Result{}, err
		}
		if len(pending) > 0 {
			// Not an error: the deletion waits, and the status says for what.
			return reconcile.Result{RequeueAfter: r.opts.RetryPeriod}, nil
		}
	}
	if err := r.releaseDependencies(ctx, fed); err != nil {
		return reconcile.Result{}, err
	}
	if r.typ.IsNamespace() && r.notifier != nil {
		r.notifier.NamespaceChanged(fed.GetName())
	}
	before := fed.DeepCopy()
	controllerutil.RemoveFinalizer(fed, typesv1beta1.FinalizerSync)
	if err := r.client.Patch(ctx, fed, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, ignoreNotFound(fmt.Errorf("removing the finalizer: %w", err))
	}
	return reconcile.Result{}, nil
}

// deleteAllCopies deletes fed's own copies in every cluster its CPV records
// or its placement names, and returns the clusters that could not be
// reached.
func (r *Reconciler) deleteAllCopies(ctx context.Context, fed *unstructured.Unstructured) ([]string, error) {
	set, list, err := r.listClusters(ctx)
	if err != nil {
		return nil, err
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := r.client.Get(ctx, r.record.key(fed), cpv); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading the ClusterPropagatedVersion: %w", err)
	}
	names, records := mayHoldCopies(fed, cpv, list)
	var pending []string
	for _, name := range names {
		if isPull(set[name]) {
			// Its agent deletes the copy, then its entry.
			if records[name].reported {
				pending = append(pending, name)
			}
			continue
		}
		release, held := hold(r.opts.Shard, name, set[name])
		if !held {
			pending = append(pending, name) // handed to another replica since the listing
			continue
		}
		done, failed := r.apply.deleteCopy(ctx, fed, cpv, name, set[name])
		release()
		// A cluster whose entry records no copy written there, and where
		// the copies cannot be listed (a kind it does not serve, or no
		// right to), holds nothing to delete.
		nothingThere := records[name].reported && !records[name].written && failed != nil && failed.listFailed
		if !done && !nothingThere {
			pending = append(pending, name)
		}
	}
	return pending, nil
}

// mayHoldCopies returns, sorted, the clusters that may hold a copy of fed,
// as the one rule for deleting says (placedBy): those its own CPV records
// or schedules, and those its placement names.
func mayHoldCopies(fed *unstructured.Unstructured, cpv *typesv1beta1.ClusterPropagatedVersion, joined []corev1beta1.FederatedCluster) ([]string, map[string]copyRecord) {
	var named []string
	if spec, err := render.ParseSpec(fed); err == nil {
		named, _ = place(spec.Placement, joined)
	}
	return placedBy(fed, cpv, named)
}
