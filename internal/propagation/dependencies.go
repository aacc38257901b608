package propagation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// dependencyWorkload is fed as the dependencies stage sees it; previous
// are the dependencies its status lists.
func (r *Reconciler) dependencyWorkload(fed *unstructured.Unstructured, spec render.Spec, clusters []string, previous []typesv1beta1.DependencyStatus) dependencies.Workload {
	w := dependencies.Workload{Federated: r.typ.Federated, Target: r.typ.Target.GroupKind(), Object: fed, Clusters: clusters, Previous: previous}
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
	old := FederatedStatusOf(s.fed).Dependencies
	if !s.spec.PropagateDependencies && len(old) == 0 {
		return // the common case: nothing to send, nothing to release
	}
	w := r.dependencyWorkload(s.fed, s.spec, s.t.names, old)
	if s.spec.PropagateDependencies {
		s.deps, s.depsErr = r.opts.Dependencies.Sync(ctx, w)
		if s.depsErr != nil && !worthReporting(s.depsErr) {
			// A race with another owner's write, which the retry a second
			// later settles: the status keeps what the last sync said.
			s.deps = old
		} else if s.depsErr != nil {
			ctrl.LoggerFrom(ctx).Error(s.depsErr, "Writing the derived resources of the dependencies")
		}
		s.depsWaiting = r.waitingForDependencies(ctx, s)
		if key := client.ObjectKeyFromObject(s.fed); len(s.depsWaiting) > 0 {
			r.waitingForDeps.Store(key, struct{}{})
		} else {
			r.waitingForDeps.Delete(key)
		}
		return
	}
	if s.depsErr = r.opts.Dependencies.Release(ctx, w); s.depsErr != nil {
		s.deps = old // listed until the workload is off them all
	}
}

// dependenciesAgain is how soon the dependencies stage of s wants another
// sync, 0 when it does not: a second after a race with another owner,
// dependencyPoll while a first copy waits for them; the retry period after a failed
// write (which the status and an Event report), or while one is missing
// or of a kind not federated (the host object's creation syncs the
// workload at once too, unless the controller restarted since).
func (r *Reconciler) dependenciesAgain(s *syncState) time.Duration {
	switch {
	case s.depsErr != nil && worthReporting(s.depsErr), dependencies.Again(s.deps):
		return r.opts.RetryPeriod
	case s.depsErr != nil:
		return time.Second // a race with another owner's write
	case len(s.depsWaiting) > 0:
		return dependencyPoll
	}
	return 0
}

// dependencyPoll is how soon a workload whose first copy in a cluster
// waits for its dependencies is synced again, at the latest: a write of a
// dependency's CPV syncs it at once (dependencySources).
const dependencyPoll = 5 * time.Second

// waitingForDependencies returns the clusters where the workload has no
// copy yet (its CPV records none) and a dependency it sends has none
// either, with what the first copy waits for: it is written once they are
// there, so that its Pods never start without them. A Push cluster is
// simply not written. A Pull cluster is held out of the CPV's
// spec.clusters, which its agent obeys, and only when the CPV has never
// listed it: a cluster once listed is never taken out (that would tell
// its agent to remove its copy). Only the derived resources are waited
// for: a user's own Federated<Kind> places its object where the user
// says. A dependency whose copy failed (its own status says why) is not
// waited for.
func (r *Reconciler) waitingForDependencies(ctx context.Context, s *syncState) map[string]string {
	recorded := map[string]bool{}
	for _, cv := range s.cpv.Status.ClusterVersions {
		recorded[string(cv.ClusterName)] = true
	}
	for _, pc := range s.cpv.Spec.Clusters {
		if isPull(s.set[string(pc.Name)]) {
			recorded[string(pc.Name)] = true
		}
	}
	var waiting map[string]string
	for _, cluster := range s.t.names {
		if recorded[cluster] {
			continue
		}
		if msg := r.awaitedIn(ctx, s.fed.GetNamespace(), s.deps, cluster); msg != "" {
			if waiting == nil {
				waiting = map[string]string{}
			}
			waiting[cluster] = msg
		}
	}
	return waiting
}

// awaitedIn says what a first copy in cluster waits for: the derived
// dependencies among deps whose CPV records no copy there yet; "" when
// none.
func (r *Reconciler) awaitedIn(ctx context.Context, ns string, deps []typesv1beta1.DependencyStatus, cluster string) string {
	var missing []string
	for _, d := range deps {
		if d.State == typesv1beta1.DependencyPropagated && !r.dependencyCopyThere(ctx, ns, d, cluster) {
			missing = append(missing, d.Kind+" "+d.Name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return "the first copy is written once its dependencies are there: " + strings.Join(missing, ", ")
}

// recordedTargets are the targets the record stage writes into the CPV's
// spec: s.t without the Pull clusters whose first copy waits for the
// dependencies (waitingForDependencies), which their agents must not see
// placed yet.
func (s *syncState) recordedTargets() targets {
	if len(s.depsWaiting) == 0 {
		return s.t
	}
	held := func(name string) bool { _, waits := s.depsWaiting[name]; return waits && isPull(s.set[name]) }
	if !slices.ContainsFunc(s.t.names, held) {
		return s.t
	}
	t := s.t
	t.names = slices.DeleteFunc(slices.Clone(s.t.names), held)
	t.replicas = maps.Clone(s.t.replicas)
	maps.DeleteFunc(t.replicas, func(name string, _ int32) bool { return held(name) })
	return t
}

// dependencyCopyThere tells whether the CPV of dependency d records a copy
// in cluster: an entry that is neither Missing nor Unreachable.
func (r *Reconciler) dependencyCopyThere(ctx context.Context, ns string, d typesv1beta1.DependencyStatus, cluster string) bool {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: strings.ToLower(d.Kind) + "-" + d.Name}, cpv); err != nil {
		return false
	}
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			return cv.State != typesv1beta1.Missing && cv.State != typesv1beta1.Unreachable
		}
	}
	return false
}

// releaseDependencies takes a deleted workload off its dependencies'
// derived resources, after its own copies are gone.
func (r *Reconciler) releaseDependencies(ctx context.Context, fed *unstructured.Unstructured) error {
	if !r.carriesDependencies() {
		return nil
	}
	if err := r.opts.Dependencies.Release(ctx, r.dependencyWorkload(fed, render.Spec{}, nil, nil)); err != nil {
		return fmt.Errorf("releasing its dependencies: %w", err)
	}
	return nil
}

// dependencyStatus sets next's dependencies and their condition, from the
// dependencies stage of a sync of a workload under propagateDependencies
// (on); without it, both are dropped, once the workload is off them all
// (err, the stage's error, is nil; until then deps are the old ones, kept
// so that the next sync tries again). A controller without the stage
// (available false) says so.
func dependencyStatus(next *typesv1beta1.FederatedStatus, on, available bool, deps []typesv1beta1.DependencyStatus, err error, generation int64, now metav1.Time) {
	if !on && err != nil {
		next.Dependencies = deps
		if worthReporting(err) {
			setCondition(&next.Conditions, typesv1beta1.FederatedDependencies, false, typesv1beta1.ReasonDependencyFailed,
				bounded("spec.propagateDependencies is off, but taking the workload off its dependencies failed, and is retried: "+err.Error(), 4096), generation, now)
		}
		return
	}
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

// recordDependencies emits a Warning Event on fed when its dependencies'
// condition turns False, or says something else while False: a
// dependency missing on the host, of a kind not federated, or whose
// derived resource could not be written.
func (rep *reporter) recordDependencies(fed *unstructured.Unstructured, old, next typesv1beta1.FederatedStatus) {
	c := meta.FindStatusCondition(next.Conditions, typesv1beta1.FederatedDependencies)
	if rep.recorder == nil || c == nil || c.Status != metav1.ConditionFalse {
		return
	}
	if o := meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedDependencies); o != nil && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message {
		return
	}
	rep.recorder.Eventf(fed, nil, "Warning", c.Reason, "PropagateDependencies", "%s", c.Message)
}

// dependencyOf names the workloads that own fed, a derived resource, as
// Kind/name; nil for any other resource (or owners that cannot be read,
// which the dependencies stage reports).
func dependencyOf(fed *unstructured.Unstructured) []string {
	if !dependencies.IsDerived(fed) {
		return nil
	}
	owners, err := dependencies.OwnersOf(fed)
	if err != nil {
		return nil
	}
	return owners.Names()
}

// waitingOwners maps a write of a dependency's CPV to the workloads of
// this type it names (spec.dependencyOf) whose first copy waits for their
// dependencies: the copy may now be written.
func (c *Controller) waitingOwners(_ context.Context, cpv *typesv1beta1.ClusterPropagatedVersion) []reconcile.Request {
	var reqs []reconcile.Request
	for _, owner := range cpv.Spec.DependencyOf {
		kind, name := dependencies.ParseOwnerName(owner)
		key := types.NamespacedName{Namespace: cpv.Namespace, Name: name}
		if _, waits := c.reconciler.waitingForDeps.Load(key); kind == c.typ.Federated.Kind && waits {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// dependencySources sync a workload when a host object it needs changes
// (the owners of the object's derived resource, of this type), and when a
// dependency's CPV changes while the workload's first copy waits for it.
func (c *Controller) dependencySources(host cache.Cache) []source.TypedSource[reconcile.Request] {
	if !c.reconciler.carriesDependencies() {
		return nil
	}
	sources := []source.TypedSource[reconcile.Request]{
		source.Kind(host, &typesv1beta1.ClusterPropagatedVersion{}, handler.TypedEnqueueRequestsFromMapFunc(c.waitingOwners)),
	}
	stage := c.reconciler.opts.Dependencies
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
