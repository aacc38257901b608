package clusterhealth

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// agentLease is what a Pull cluster's agent Lease says.
type agentLease struct {
	// found: the Lease exists and has been renewed at least once.
	found bool
	// holder, renewed and duration are the Lease's: renewed is the agent's
	// clock, which may be skewed from the host's.
	holder   string
	renewed  time.Time
	duration time.Duration
	version  string
	// clusterID is the UID of the member's kube-system namespace, as the
	// agent published it.
	clusterID string
	// seen is when, by the host's clock, the host first saw this renewal.
	seen time.Time
}

// expiresAt is when the agent is late: one Lease duration after the host
// saw its last renewal, so that an agent whose clock is ahead of the
// host's does not stay Ready after it stops, nor one whose clock is
// behind turn not Ready while it renews.
func (l agentLease) expiresAt() time.Time { return l.seen.Add(l.duration) }

// sighting is the last renewal of an agent's Lease the host saw: the
// agent's renewTime, and the host's time when it first saw it.
type sighting struct {
	renewed, seen time.Time
}

// sight returns the sighting of a renewal at renewed, seen at now after
// prev. A renewal seen before keeps the time it was first seen. A
// renewal the host has not seen before counts from now, except the first
// the controller sees (after a start, or a new cluster): its age is then
// unknown, so it counts from the renewTime when that is in the past (an
// agent stopped long ago is not Ready for a Lease duration after every
// controller restart); an agent behind the host's clock is Ready again at
// its next renewal.
func sight(prev *sighting, renewed, now time.Time) sighting {
	switch {
	case prev != nil && prev.renewed.Equal(renewed):
		return *prev
	case prev == nil && renewed.Before(now):
		return sighting{renewed: renewed, seen: renewed}
	default:
		return sighting{renewed: renewed, seen: now}
	}
}

// sightRenewal records the renewal at renewed of cluster's Lease and
// returns when the host first saw it.
func (r *Reconciler) sightRenewal(cluster string, renewed time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := sight(r.sightings[cluster], renewed, r.now())
	r.sightings[cluster] = &s
	return s.seen
}

// readLease reads the Lease of cluster's agent.
func (r *Reconciler) readLease(ctx context.Context, cluster string) (agentLease, error) {
	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: r.opts.Namespace, Name: registration.AgentLeaseName(cluster)}
	if err := r.client.Get(ctx, key, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return agentLease{}, nil
		}
		return agentLease{}, fmt.Errorf("reading the agent Lease %s: %w", key, err)
	}
	if lease.Spec.RenewTime == nil {
		return agentLease{}, nil
	}
	l := agentLease{
		found: true, renewed: lease.Spec.RenewTime.Time,
		version:   lease.Annotations[corev1beta1.AnnotationAgentKubernetesVersion],
		clusterID: lease.Annotations[corev1beta1.AnnotationAgentClusterID],
	}
	l.seen = r.sightRenewal(cluster, l.renewed)
	if lease.Spec.HolderIdentity != nil {
		l.holder = *lease.Spec.HolderIdentity
	}
	if lease.Spec.LeaseDurationSeconds != nil {
		l.duration = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	return l, nil
}

// clusterForLease maps an agent's Lease in the control-plane namespace to
// its cluster.
func (r *Reconciler) clusterForLease(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(obj.GetName(), registration.AgentPrefix)
	if obj.GetNamespace() != r.opts.Namespace || !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: name}}}
}
