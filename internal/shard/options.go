package shard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// Options configure a Membership.
type Options struct {
	// Namespace is the control-plane namespace, where the replicas'
	// Leases live.
	Namespace string
	// Identity names this replica among the running ones: its pod's name.
	// Two processes must never run with one identity at the same time. A
	// process restarted with its predecessor's identity (a container
	// restart) resumes its clusters at once, which is safe because that
	// predecessor is gone.
	Identity string
	// LeaseDuration is how long the other replicas wait, after they last
	// saw this replica renew its Lease, before they take its clusters over.
	LeaseDuration time.Duration
	// RenewDeadline is how long this replica keeps serving without a
	// successful renewal; shorter than LeaseDuration, so that it has
	// stopped before anyone takes over.
	RenewDeadline time.Duration
	// RetryPeriod is how often the Lease is renewed, and how soon a failed
	// renewal is tried again.
	RetryPeriod time.Duration
	// ReleaseOnCancel releases the Lease when Start's context ends, so
	// that the others take this replica's clusters over at once rather
	// than after LeaseDuration.
	ReleaseOnCancel bool
	// Owner, when set, becomes the owner of the Lease (the replica's Pod),
	// so that Kubernetes' garbage collector deletes the Lease of a replica
	// that is gone for good. Without it, the Lease of a replica that
	// stopped stays, released or expired, and counts for nothing.
	Owner *metav1.OwnerReference
	// OnChange, when set, is called each time this replica starts (serves
	// true) or stops serving a cluster, after Serves says so. It is called
	// from Start's goroutine, one call at a time, and must not block: a
	// stop is announced to the others only after OnChange returns.
	OnChange func(cluster string, serves bool)
}

// DefaultOptions are the timings of controller-runtime's leader election
// (15 s, 10 s, 2 s), in the default control-plane namespace, releasing on
// cancel.
func DefaultOptions() Options {
	return Options{
		Namespace:       corev1beta1.DefaultFederationNamespace,
		LeaseDuration:   15 * time.Second,
		RenewDeadline:   10 * time.Second,
		RetryPeriod:     2 * time.Second,
		ReleaseOnCancel: true,
	}
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("the namespace of the replicas' Leases must not be empty"))
	}
	if o.Identity == "" {
		errs = append(errs, errors.New("the replica's identity must not be empty"))
	} else if msgs := validation.IsDNS1123Subdomain(LeaseName(o.Identity)); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("the replica's identity %q does not make a valid Lease name: %s", o.Identity, strings.Join(msgs, "; ")))
	}
	if o.RetryPeriod <= 0 || o.RenewDeadline <= o.RetryPeriod || o.LeaseDuration <= o.RenewDeadline {
		errs = append(errs, fmt.Errorf("the replica Lease's timings must satisfy 0 < retry period < renew deadline < lease duration, got %s, %s and %s",
			o.RetryPeriod, o.RenewDeadline, o.LeaseDuration))
	}
	return errors.Join(errs...)
}

// leaseSeconds is LeaseDuration as the Lease records it, in whole seconds
// rounded up: a longer duration only delays a takeover.
func (o Options) leaseSeconds() int32 {
	return int32((o.LeaseDuration + time.Second - 1) / time.Second)
}
