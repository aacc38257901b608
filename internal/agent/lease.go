package agent

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// leaseRenewer renews the agent's Lease on the host every interval. The
// Lease is created by `fedwarden join --sync-mode Pull`: the agent may only
// read and update that one Lease.
type leaseRenewer struct {
	client   client.Client
	key      client.ObjectKey
	holder   string
	duration time.Duration
	interval time.Duration
	// version is the member's Kubernetes version, and clusterID its
	// kube-system namespace's UID, published on the Lease.
	version   string
	clusterID string
	now       func() time.Time
}

var _ manager.Runnable = (*leaseRenewer)(nil)

// Start renews the Lease until ctx ends. A failed renewal is logged when
// renewals start failing and when they succeed again, not every time.
func (l *leaseRenewer) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("lease", l.key)
	failing := false
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		err := l.renew(ctx)
		switch {
		case err != nil && !failing:
			log.Error(err, "Renewing the agent Lease on the host failed; the host will mark this cluster not Ready if this goes on", "leaseDuration", l.duration)
		case err == nil && failing:
			log.Info("Renewing the agent Lease on the host works again")
		}
		failing = err != nil
	}, l.interval)
	return nil
}

// NeedLeaderElection: the agent does not elect a leader.
func (l *leaseRenewer) NeedLeaderElection() bool { return false }

// renew writes the holder, the renew time, the duration and the version.
func (l *leaseRenewer) renew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, l.interval)
	defer cancel()
	lease := &coordinationv1.Lease{}
	if err := l.client.Get(ctx, l.key, lease); err != nil {
		return fmt.Errorf("reading Lease %s (did `fedwarden join --sync-mode Pull` create it?): %w", l.key, err)
	}
	now := metav1.NewMicroTime(l.now())
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.holder {
		lease.Spec.HolderIdentity = &l.holder
		lease.Spec.AcquireTime = &now
		transitions := int32(0)
		if lease.Spec.LeaseTransitions != nil {
			transitions = *lease.Spec.LeaseTransitions + 1
		}
		lease.Spec.LeaseTransitions = &transitions
	}
	lease.Spec.RenewTime = &now
	seconds := int32(l.duration / time.Second)
	lease.Spec.LeaseDurationSeconds = &seconds
	publish := func(key, value string) {
		if value == "" {
			return
		}
		if lease.Annotations == nil {
			lease.Annotations = map[string]string{}
		}
		lease.Annotations[key] = value
	}
	publish(corev1beta1.AnnotationAgentKubernetesVersion, l.version)
	publish(corev1beta1.AnnotationAgentClusterID, l.clusterID)
	if err := l.client.Update(ctx, lease); err != nil {
		return fmt.Errorf("renewing Lease %s: %w", l.key, err)
	}
	return nil
}
