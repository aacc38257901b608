package propagation

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
)

// federatedChanged lets through changes a sync depends on: spec
// (generation), labels, annotations (orphan, adoption, resync) and the
// start of deletion; not the controller's own status writes, nor its own
// finalizer (the sync that added it goes on).
func federatedChanged() predicate.TypedPredicate[client.Object] {
	return predicate.Or[client.Object](
		predicate.TypedGenerationChangedPredicate[client.Object]{},
		predicate.TypedAnnotationChangedPredicate[client.Object]{},
		predicate.TypedLabelChangedPredicate[client.Object]{},
		predicate.TypedFuncs[client.Object]{
			UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
				return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
			},
		},
	)
}

// clusterChanged lets through the FederatedCluster changes that change
// placement or where copies may be written: creation, deletion, labels,
// spec (region, zones) and the Ready condition's status.
func clusterChanged() predicate.TypedPredicate[*corev1beta1.FederatedCluster] {
	return predicate.TypedFuncs[*corev1beta1.FederatedCluster]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1beta1.FederatedCluster]) bool {
			return !labels.Equals(e.ObjectOld.Labels, e.ObjectNew.Labels) ||
				e.ObjectOld.Generation != e.ObjectNew.Generation ||
				meta.IsStatusConditionTrue(e.ObjectOld.Status.Conditions, corev1beta1.ClusterReady) !=
					meta.IsStatusConditionTrue(e.ObjectNew.Status.Conditions, corev1beta1.ClusterReady)
		},
	}
}

// preferenceChanged lets through ReplicaSchedulingPreference creations,
// deletions and spec changes, not the controller's own status writes.
func preferenceChanged() predicate.TypedPredicate[*schedulingv1alpha1.ReplicaSchedulingPreference] {
	return predicate.TypedGenerationChangedPredicate[*schedulingv1alpha1.ReplicaSchedulingPreference]{}
}
