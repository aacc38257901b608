package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leaderAnnotation is where client-go's ConfigMap and Endpoints locks keep
// their leader record (KubeFed's default lock is a ConfigMap).
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// lockPollInterval is how often the lock is read while waiting.
const lockPollInterval = time.Second

// leaderRecord is what a leader lock says: who holds it, and the last
// renewal. Zero when there is no lock.
type leaderRecord struct {
	Holder string `json:"holderIdentity"`
	Renew  string `json:"renewTime"`
}

// readLock reads the leader lock name of namespace: a Lease, a ConfigMap or
// an Endpoints, whichever holds a record.
func readLock(ctx context.Context, c client.Client, namespace, name string) (leaderRecord, error) {
	key := client.ObjectKey{Namespace: namespace, Name: name}
	lease := &coordinationv1.Lease{}
	err := c.Get(ctx, key, lease)
	switch {
	case err == nil && lease.Spec.HolderIdentity != nil:
		r := leaderRecord{Holder: *lease.Spec.HolderIdentity}
		if lease.Spec.RenewTime != nil {
			r.Renew = lease.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
		}
		return r, nil
	case err != nil && !apierrors.IsNotFound(err):
		return leaderRecord{}, fmt.Errorf("reading Lease %s: %w", key, err)
	}
	endpoints := &unstructured.Unstructured{}
	endpoints.SetAPIVersion("v1")
	endpoints.SetKind("Endpoints")
	for _, obj := range []client.Object{&corev1.ConfigMap{}, endpoints} {
		err := c.Get(ctx, key, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return leaderRecord{}, fmt.Errorf("reading the leader lock %s: %w", key, err)
		}
		raw := obj.GetAnnotations()[leaderAnnotation]
		if raw == "" {
			continue
		}
		var r leaderRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return leaderRecord{}, fmt.Errorf("reading the leader record of %s: %w", key, err)
		}
		return r, nil
	}
	return leaderRecord{}, nil
}

// waitLockIdle waits until nobody renews the leader lock name of
// namespace: it is gone, released (no holder), or has not changed for
// leaseDuration, after which a stopped leader's term has run out. It gives
// up after timeout.
func waitLockIdle(ctx context.Context, c client.Client, namespace, name string, leaseDuration, timeout time.Duration) error {
	var (
		last      leaderRecord
		changedAt = time.Now()
		first     = true
	)
	err := wait.PollUntilContextTimeout(ctx, lockPollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		r, err := readLock(ctx, c, namespace, name)
		if err != nil {
			return false, err
		}
		if r.Holder == "" {
			return true, nil
		}
		if first || r != last {
			first, last, changedAt = false, r, time.Now()
		}
		return time.Since(changedAt) > leaseDuration, nil
	})
	if wait.Interrupted(err) {
		return fmt.Errorf("the leader lock %s/%s was still renewed by %s after %s: its controller-manager still runs; "+
			"stop it (scale its Deployment to 0, or end its process) and run the command again, or wait longer (--stop-timeout)", namespace, name, last.Holder, timeout)
	}
	return err
}
