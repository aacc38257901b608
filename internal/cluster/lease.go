package cluster

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
	found    bool
	holder   string
	renewed  time.Time
	duration time.Duration
	version  string
}

// expiresAt is when the agent is late.
func (l agentLease) expiresAt() time.Time { return l.renewed.Add(l.duration) }

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
	l := agentLease{found: true, renewed: lease.Spec.RenewTime.Time, version: lease.Annotations[corev1beta1.AnnotationAgentKubernetesVersion]}
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
