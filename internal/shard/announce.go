package shard

import (
	"context"
	"fmt"
	"slices"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// announce renews this replica's Lease, creating it when there is none,
// listing claims. Once the API server has taken it, this replica may serve
// the clusters it claims until RenewDeadline after the renewal was sent:
// the others count the Lease's duration from when they see the renewal,
// which is later.
func (m *Membership) announce(ctx context.Context, claims []string) error {
	sent := m.now()
	deadline := sent.Add(m.opts.RenewDeadline)
	if !m.renewed.IsZero() {
		// A renewal that answers after the last one stopped covering this
		// replica comes too late: Start gives up then.
		deadline = m.renewed.Add(m.opts.RenewDeadline)
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// Until the API server answers, what the Lease lists is unknown: a
	// request that fails may still have been stored.
	m.published = nil
	lease, err := m.write(ctx, true, func(l *coordinationv1.Lease) { m.stamp(l, claims, sent) })
	if err != nil {
		return err
	}
	m.lease, m.published, m.renewed = lease, claims, sent
	m.mu.Lock()
	m.fresh = sent.Add(m.opts.RenewDeadline)
	m.mu.Unlock()
	return nil
}

// releaseLease clears the holder and the claims of this replica's Lease,
// so that the others take its clusters over without waiting for it to
// expire. The Lease itself stays, for the same identity to renew again. A
// renewal cancelled by the stop may still reach the API server after the
// Lease is read: the release then conflicts, and reads it again.
func (m *Membership) releaseLease(ctx context.Context) error {
	now := metav1.NewMicroTime(m.now())
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		_, err := m.write(ctx, false, func(l *coordinationv1.Lease) {
			l.Spec.HolderIdentity = nil
			l.Spec.RenewTime = &now
			delete(l.Annotations, AnnotationClaims)
		})
		return err
	})
	m.lease, m.published = nil, nil
	return err
}

// write changes this replica's Lease with mutate and updates it, from the
// copy last written or read (or read again after a failure). With create,
// a missing Lease is created; without, there is nothing to change.
func (m *Membership) write(ctx context.Context, create bool, mutate func(*coordinationv1.Lease)) (*coordinationv1.Lease, error) {
	if m.lease == nil {
		got, err := m.leases.Get(ctx, m.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err) && !create:
			return nil, nil
		case apierrors.IsNotFound(err):
			lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: m.opts.Namespace}}
			mutate(lease)
			created, err := m.leases.Create(ctx, lease, metav1.CreateOptions{})
			if err != nil {
				return nil, fmt.Errorf("creating Lease %s/%s: %w", m.opts.Namespace, m.name, err)
			}
			return created, nil
		case err != nil:
			return nil, fmt.Errorf("reading Lease %s/%s: %w", m.opts.Namespace, m.name, err)
		}
		m.lease = got
	}
	lease := m.lease.DeepCopy()
	mutate(lease)
	updated, err := m.leases.Update(ctx, lease, metav1.UpdateOptions{})
	if err != nil {
		// A conflict or a deleted Lease: read it again next time.
		m.lease = nil
		return nil, fmt.Errorf("updating Lease %s/%s: %w", m.opts.Namespace, m.name, err)
	}
	return updated, nil
}

// stamp makes lease this replica's, renewed at now, listing claims.
func (m *Membership) stamp(lease *coordinationv1.Lease, claims []string, now time.Time) {
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[LabelReplica] = "true"
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[AnnotationClaims] = encodeClaims(claims)
	if o := m.opts.Owner; o != nil && !slices.ContainsFunc(lease.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == o.UID }) {
		lease.OwnerReferences = append(lease.OwnerReferences, *o)
	}
	t := metav1.NewMicroTime(now)
	if holder := lease.Spec.HolderIdentity; holder == nil || *holder != m.opts.Identity {
		identity := m.opts.Identity
		lease.Spec.HolderIdentity = &identity
		lease.Spec.AcquireTime = &t
		if holder != nil {
			transitions := int32(1)
			if lease.Spec.LeaseTransitions != nil {
				transitions = *lease.Spec.LeaseTransitions + 1
			}
			lease.Spec.LeaseTransitions = &transitions
		}
	}
	lease.Spec.RenewTime = &t
	seconds := m.opts.leaseSeconds()
	lease.Spec.LeaseDurationSeconds = &seconds
}
