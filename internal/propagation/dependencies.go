package propagation

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/render"
)

// carriesDependencies tells whether the type's copies have a pod template
// whose dependencies can go with them, and the controller can send them.
func (r *Reconciler) carriesDependencies() bool {
	return r.opts.Dependencies != nil && r.agent == nil && dependencies.HasPodTemplate(r.typ.Target.GroupKind())
}

// dependencyWorkload is fed as the dependencies stage sees it.
func (r *Reconciler) dependencyWorkload(fed *unstructured.Unstructured, spec render.Spec, clusters []string) dependencies.Workload {
	w := dependencies.Workload{Federated: r.typ.Federated, Target: r.typ.Target.GroupKind(), Object: fed, Clusters: clusters}
	if spec.DriftPolicy != nil {
		w.Remediation = spec.DriftPolicy.Remediation
	}
	return w
}

// carryDependencies is the dependencies stage, after place and before
// apply: under spec.propagateDependencies, the derived federated resource
// of each object the pod template names is placed where the workload is.
// Without it, a workload that had dependencies (its status lists them) is
// taken off their derived resources. A failed write does not stop the
// workload's own sync: it is reported and retried.
func (r *Reconciler) carryDependencies(ctx context.Context, s *syncState) {
	if !r.carriesDependencies() {
		return
	}
	w := r.dependencyWorkload(s.fed, s.spec, s.t.names)
	if s.spec.PropagateDependencies {
		s.deps, s.depsErr = r.opts.Dependencies.Sync(ctx, w)
		return
	}
	if len(FederatedStatusOf(s.fed).Dependencies) > 0 {
		s.depsErr = r.opts.Dependencies.Release(ctx, w)
	}
}

// releaseDependencies takes a deleted workload off its dependencies'
// derived resources, after its own copies are gone.
func (r *Reconciler) releaseDependencies(ctx context.Context, fed *unstructured.Unstructured) error {
	if !r.carriesDependencies() {
		return nil
	}
	if err := r.opts.Dependencies.Release(ctx, r.dependencyWorkload(fed, render.Spec{}, nil)); err != nil {
		return fmt.Errorf("releasing its dependencies: %w", err)
	}
	return nil
}

// dependencyStatus sets next's dependencies and their condition, from the
// dependencies stage of a sync of a workload under propagateDependencies
// (on); without it, both are dropped. A controller without the stage
// (available false) says so.
func dependencyStatus(next *typesv1beta1.FederatedStatus, on, available bool, deps []typesv1beta1.DependencyStatus, generation int64, now metav1.Time) {
	if !on {
		next.Dependencies = nil
		meta.RemoveStatusCondition(&next.Conditions, typesv1beta1.FederatedDependencies)
		return
	}
	if !available {
		next.Dependencies = nil
		setCondition(&next.Conditions, typesv1beta1.FederatedDependencies, false, typesv1beta1.ReasonDependenciesNotEnabled,
			"spec.propagateDependencies is set, but the controller-manager runs without --propagate-dependencies "+
				"(Helm: propagateDependencies=true): the workload goes without its dependencies", generation, now)
		return
	}
	next.Dependencies = deps
	if len(next.Dependencies) > 256 {
		next.Dependencies = next.Dependencies[:256]
	}
	reason, msg := typesv1beta1.ReasonDependenciesPropagated, fmt.Sprintf("%d dependencies go with the workload", len(deps))
	var wrong []string
	for _, d := range deps {
		var r string
		switch d.State {
		case typesv1beta1.DependencyMissing:
			if d.Optional {
				continue
			}
			r = typesv1beta1.ReasonDependencyMissing
		case typesv1beta1.DependencyKindNotEnabled:
			r = typesv1beta1.ReasonDependencyKindNotEnabled
		case typesv1beta1.DependencyFailed:
			r = typesv1beta1.ReasonDependencyFailed
		default:
			continue
		}
		if len(wrong) == 0 {
			reason = r
		}
		wrong = append(wrong, d.Message)
	}
	if len(wrong) > 0 {
		msg = strings.Join(wrong, "; ")
	}
	setCondition(&next.Conditions, typesv1beta1.FederatedDependencies, len(wrong) == 0, reason, bounded(msg, 4096), generation, now)
}

// dependencySources sync a workload when a host object it needs changes:
// the owners of the object's derived resource, of this type.
func (c *Controller) dependencySources() []source.TypedSource[reconcile.Request] {
	if !c.reconciler.carriesDependencies() {
		return nil
	}
	stage := c.reconciler.opts.Dependencies
	var sources []source.TypedSource[reconcile.Request]
	for _, kind := range dependencies.Kinds {
		sources = append(sources, stage.Source(kind, handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
			var reqs []reconcile.Request
			for _, name := range stage.OwnersOfHost(ctx, kind, o.GetNamespace(), o.GetName(), c.typ.Federated) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}})
			}
			return reqs
		})))
	}
	return sources
}
