package propagation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/notify"
)

// reporter is the report stage of a sync: the federated resource's status
// and conditions, its ReplicaSchedulingPreference's, the Events a sync
// raises, and the drifted-resources gauge.
type reporter struct {
	typ      Type
	client   client.Client
	recorder recorder.EventRecorder
	drifted  *driftGauge
	now      func() time.Time
	// driftNotifier, when not nil, is told of drift transitions.
	driftNotifier DriftNotifier
	// dependencies: the sync has a dependencies stage, whose outcome
	// the status reports.
	dependencies bool
}

// writeFederatedStatus writes the federated resource's status when it
// changed.
func (rep *reporter) writeFederatedStatus(ctx context.Context, s *syncState) error {
	fed := s.fed
	old := FederatedStatusOf(fed)
	now := metav1.NewTime(rep.now())
	next := federatedStatus(old, rep.typ, s.t, s.results, fed.GetGeneration(), now)
	rolloutStatus(&next, s.rollout, fed.GetGeneration(), now)
	on := s.spec.PropagateDependencies && dependencies.HasPodTemplate(rep.typ.Target.GroupKind())
	dependencyStatus(&next, on, rep.dependencies, s.deps, s.depsErr, fed.GetGeneration(), now)
	rep.recordDependencies(fed, old, next)
	return rep.patchFederatedStatus(ctx, fed, old, next)
}

// patchFederatedStatus writes next as fed's status when it differs from old.
func (rep *reporter) patchFederatedStatus(ctx context.Context, fed *unstructured.Unstructured, old, next typesv1beta1.FederatedStatus) error {
	if equality.Semantic.DeepEqual(old, next) {
		return nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&next)
	if err != nil {
		return fmt.Errorf("encoding the status: %w", err)
	}
	before := fed.DeepCopy()
	fed.Object["status"] = raw
	// Guarded by the resourceVersion the sync read: a sync that read the
	// resource from a cache not yet holding the status the previous sync
	// wrote (a rollout's waves, a cluster's health) must not write its
	// stale decision over it. It fails with a conflict, and the retry reads
	// the resource again.
	if err := rep.client.Status().Patch(ctx, fed, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreNotFound(fmt.Errorf("writing the status of %s %s: %w", rep.typ.Federated.Kind, client.ObjectKeyFromObject(fed), err))
	}
	return nil
}

// deletion is the report stage of a deletion, deferred by reconcileDelete
// so that it runs on every exit: one that leaves the resource in place says
// why in the Propagated condition (see deletionStatus); one that let it go
// writes nothing. It only describes: it writes no member and no CPV. It
// returns err, with the error of its own write if any; a resource gone
// meanwhile is no error.
func (rep *reporter) deletion(ctx context.Context, fed *unstructured.Unstructured, pending []string, err error) error {
	old := FederatedStatusOf(fed)
	next, ok := deletionStatus(old, pending, err, fed.GetGeneration(), metav1.NewTime(rep.now()))
	if !ok {
		return err
	}
	if werr := rep.patchFederatedStatus(ctx, fed, old, next); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// deletionStatus is old with the Propagated condition of a deletion that
// stopped on err, or waits for the copies of the clusters pending: False,
// DeletionFailed with err as its message, or DeletionPending naming the
// clusters. It is false when there is nothing to say: the deletion went
// through, or err is a race or the end of the controller (worthReporting),
// settled by the retry that follows.
func deletionStatus(old typesv1beta1.FederatedStatus, pending []string, err error, generation int64, now metav1.Time) (typesv1beta1.FederatedStatus, bool) {
	var reason, msg string
	switch {
	case err != nil && !worthReporting(err):
		return old, false
	case err != nil:
		reason = typesv1beta1.ReasonDeletionFailed
		msg = fmt.Sprintf("deleting: the last attempt stopped before it finished, and is retried: %v", err)
	case len(pending) > 0:
		reason = typesv1beta1.ReasonDeletionPending
		msg = fmt.Sprintf("deleting: waiting for the copies in clusters %s to be deleted: they cannot be reached, or their agents (Pull) have not deleted them yet; "+
			"they are deleted when the clusters are Ready again, or unjoin them", strings.Join(pending, ", "))
	default:
		return old, false
	}
	next := *old.DeepCopy()
	setCondition(&next.Conditions, typesv1beta1.FederatedPropagated, false, reason, bounded(msg, 4096), generation, now)
	return next, true
}

// recordDecision emits an Event on fed when its Scheduled condition is
// about to change and the change is worth one (see worthAnEvent).
func (rep *reporter) recordDecision(fed *unstructured.Unstructured, t targets) {
	ok, reason, msg := scheduledCondition(t)
	old := meta.FindStatusCondition(FederatedStatusOf(fed).Conditions, typesv1beta1.FederatedScheduled)
	if old != nil && old.Reason == reason && old.Message == msg {
		return
	}
	schedulingDecisions.WithLabelValues(reason).Inc()
	if rep.recorder == nil || !worthAnEvent(old, t, ok, reason, msg) {
		return
	}
	eventType := "Normal"
	if !ok {
		eventType = "Warning"
	}
	rep.recorder.Eventf(fed, nil, eventType, reason, "Schedule", "%s", msg)
}

// recordFailover emits an Event on fed for each cluster that failed over
// or failed back in this sync, and sends it to the notification sinks.
func (rep *reporter) recordFailover(fed *unstructured.Unstructured, f *failoverState) {
	if f == nil {
		return
	}
	for _, e := range f.events() {
		eventType, reason, action, kind := corev1.EventTypeWarning, typesv1beta1.EventFailedOver, "Failover", notify.FailedOver
		if e.back {
			eventType, reason, action, kind = corev1.EventTypeNormal, typesv1beta1.EventFailedBack, "Failback", notify.FailedBack
		}
		if rep.recorder != nil {
			rep.recorder.Eventf(fed, nil, eventType, reason, action, "%s", e.message)
		}
		if rep.driftNotifier != nil {
			rep.driftNotifier.Notify(notify.Transition{
				Kind: kind, Federated: rep.typ.Federated, Resource: rep.typ.FederatedResource, Target: rep.typ.Target,
				Namespace: fed.GetNamespace(), Name: fed.GetName(), Cluster: e.cluster, Message: e.message,
			})
		}
	}
}

// writePreferenceStatus sets the RSP's Scheduled condition.
func (rep *reporter) writePreferenceStatus(ctx context.Context, rsp *schedulingv1alpha1.ReplicaSchedulingPreference, t targets) error {
	if rsp == nil {
		return nil
	}
	next := *rsp.Status.DeepCopy()
	status, reason, msg := true, schedulingv1alpha1.ReasonDivided, "divided "+fmt.Sprint(rsp.Spec.TotalReplicas)+" replicas: "+t.decision.Summary()
	switch {
	case t.decision.Failure != nil:
		status, reason, msg = false, schedulingv1alpha1.ReasonNotDivided, t.decision.Explain(maxExplanation)
	case len(t.decision.Notes) > 0:
		status, reason, msg = false, schedulingv1alpha1.ReasonNotDivided, msg+"; "+t.decision.Notes[0].String()
	}
	setCondition(&next.Conditions, schedulingv1alpha1.RSPScheduled, status, reason, bounded(msg, maxExplanation), rsp.Generation, metav1.NewTime(rep.now()))
	if equality.Semantic.DeepEqual(rsp.Status, next) {
		return nil
	}
	before := rsp.DeepCopy()
	rsp.Status = next
	if err := rep.client.Status().Patch(ctx, rsp, client.MergeFrom(before)); err != nil {
		return ignoreNotFound(fmt.Errorf("writing the status of ReplicaSchedulingPreference %s: %w", client.ObjectKeyFromObject(rsp), err))
	}
	return nil
}

// FederatedStatusOf reads a federated resource's status, as the report
// stage last wrote it: the rollout stage, and fedwarden plan, take the
// rollout's previous status from it.
func FederatedStatusOf(fed *unstructured.Unstructured) typesv1beta1.FederatedStatus {
	var st typesv1beta1.FederatedStatus
	if raw, found, _ := unstructured.NestedMap(fed.Object, "status"); found {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	}
	return st
}

// sync is the report stage, deferred by reconcileNormal so that it runs on
// every exit: after a sync that went through, it records the Events, the
// drift gauge, and the status of the resource and of its
// ReplicaSchedulingPreference; after one that stopped on err, the
// Propagated condition says why (see writeStopped), and nothing else
// changes. It returns err, with the error of its own writes if any.
func (rep *reporter) sync(ctx context.Context, s *syncState, err error) error {
	switch {
	case s.gone:
		return err
	case err == nil:
		return rep.synced(ctx, s)
	case !worthReporting(err):
		return err
	}
	if werr := rep.writeStopped(ctx, s.fed, err); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// synced reports a sync that went through.
func (rep *reporter) synced(ctx context.Context, s *syncState) error {
	rep.recordDecision(s.fed, s.t)
	rep.recordFailover(s.fed, s.t.failover)
	rep.recordDrift(s.fed, s.in, s.results)
	rep.recordFailures(s.fed, s.in, s.results)
	rep.drifted.set(client.ObjectKeyFromObject(s.fed), s.results)
	if err := rep.writeFederatedStatus(ctx, s); err != nil {
		return err
	}
	// After the status that records them: a sync whose status write was
	// refused (it decided from a stale status) starts no wave.
	rep.recordRollout(s.fed, s.rollout)
	return rep.writePreferenceStatus(ctx, s.rsp, s.t)
}

// worthReporting tells whether a sync that stopped on err says so in the
// resource's status: not for a race with another writer, which the retry
// that follows at once settles (a conflict, an object created meanwhile),
// nor when the resource is gone or the controller stops.
func worthReporting(err error) bool {
	return !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// writeStopped writes the status of fed, whose sync stopped on err (see
// stoppedStatus).
func (rep *reporter) writeStopped(ctx context.Context, fed *unstructured.Unstructured, err error) error {
	old := FederatedStatusOf(fed)
	return rep.patchFederatedStatus(ctx, fed, old, stoppedStatus(old, err, fed.GetGeneration(), metav1.NewTime(rep.now())))
}

// stoppedStatus is old with the Propagated condition False
// (PropagationFailed), err as its message. The rest of the status, the
// clusters' entries included, stays as the last sync that went through
// left it: this one did not check them all.
func stoppedStatus(old typesv1beta1.FederatedStatus, err error, generation int64, now metav1.Time) typesv1beta1.FederatedStatus {
	next := *old.DeepCopy()
	setCondition(&next.Conditions, typesv1beta1.FederatedPropagated, false, typesv1beta1.ReasonPropagationFailed,
		bounded(stoppedMessage(err), 4096), generation, now)
	return next
}

// stoppedMessage says, in the Propagated condition, why a sync stopped.
func stoppedMessage(err error) string {
	if errors.Is(err, reconcile.TerminalError(nil)) {
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		return fmt.Sprintf("not synced: %v; the resource is synced again when it changes", err)
	}
	return fmt.Sprintf("the last sync stopped before it finished, and is retried: %v", err)
}

// refusedStatus is the status of a resource that is not synced, for
// reason: both conditions False with the reason, and no cluster.
func refusedStatus(old typesv1beta1.FederatedStatus, reason, message string, generation int64, now metav1.Time) typesv1beta1.FederatedStatus {
	st := typesv1beta1.FederatedStatus{ObservedGeneration: generation, Conditions: append([]metav1.Condition(nil), old.Conditions...), ClusterCount: new(int32(0))}
	setCondition(&st.Conditions, typesv1beta1.FederatedScheduled, false, reason, message, generation, now)
	setCondition(&st.Conditions, typesv1beta1.FederatedPropagated, false, reason, message, generation, now)
	return st
}

// refuse reports, with the resource's conditions and an Event when they
// change, why fed is not synced, and writes nothing else: no member, no CPV,
// no finalizer. Retrying cannot fix the input: the error is terminal.
func (rep *reporter) refuse(ctx context.Context, fed *unstructured.Unstructured, reason, message string) error {
	old := FederatedStatusOf(fed)
	if c := meta.FindStatusCondition(old.Conditions, typesv1beta1.FederatedPropagated); (c == nil || c.Reason != reason || c.Message != message) && rep.recorder != nil {
		rep.recorder.Eventf(fed, nil, corev1.EventTypeWarning, reason, "Sync", "%s", message)
	}
	next := refusedStatus(old, reason, message, fed.GetGeneration(), metav1.NewTime(rep.now()))
	if err := rep.patchFederatedStatus(ctx, fed, old, next); err != nil {
		return err
	}
	return reconcile.TerminalError(fmt.Errorf("%s %s is not synced: %s", rep.typ.Federated.Kind, client.ObjectKeyFromObject(fed), reason))
}
