package propagation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// policyFor is the drift policy of cluster name, whose FederatedCluster is
// fc, with the applier's bound on waivers. The host has fc; an agent reads
// its own cluster's labels from the host, and only when a waiver selects
// clusters by label. A failure to read them makes the policy Invalid.
func (a *applier) policyFor(ctx context.Context, spec render.Spec, name string, fc *corev1beta1.FederatedCluster) drift.Policy {
	var clusterLabels map[string]string
	var readErr error
	switch {
	case fc != nil:
		clusterLabels = fc.Labels
	case a.agent != nil && drift.SelectsByLabel(spec.DriftPolicy):
		clusterLabels, readErr = a.agent.labels(ctx)
	}
	policy := PolicyFor(spec, name, clusterLabels, a.defaultRemediation)
	policy.MaxWaiver = a.maxWaiver
	policy.Invalid = errors.Join(policy.Invalid, readErr)
	return policy
}

// labelsTTL is how long an agent uses the labels it read of its own
// FederatedCluster before it reads them again: a label change reaches its
// waivers within it and the next sync.
const labelsTTL = 10 * time.Second

// ownLabels keeps the labels of the agent's own FederatedCluster, so that
// they are read from the host at most once per labelsTTL however many
// resources sync, and so that the last ones read still serve while the host
// cannot be read (the agent keeps syncing, and healing, while it is down).
type ownLabels struct {
	mu     sync.Mutex
	labels map[string]string
	// read is when they were read; zero: never.
	read time.Time
	// now is the clock; time.Now when nil.
	now func() time.Time
}

// labels returns the labels of the agent's own FederatedCluster on the
// host, which the agent may read (and no other).
func (s *agentSide) labels(ctx context.Context) (map[string]string, error) {
	o := s.own
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	if o.now != nil {
		now = o.now()
	}
	if !o.read.IsZero() && now.Sub(o.read) < labelsTTL {
		return o.labels, nil
	}
	fc := &corev1beta1.FederatedCluster{}
	err := s.host.Get(ctx, types.NamespacedName{Name: s.cluster}, fc)
	switch {
	case err == nil:
		o.labels, o.read = fc.Labels, now
		return o.labels, nil
	case !o.read.IsZero():
		return o.labels, nil // the last labels read, while the host cannot be
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("reading the labels of FederatedCluster %s, which a waiver's clusterSelector selects on: %w; "+
			"an agent joined before Fedwarden let agents read their own FederatedCluster gets that right when the cluster is joined again", s.cluster, err)
	}
	return nil, fmt.Errorf("reading the labels of FederatedCluster %s, which a waiver's clusterSelector selects on: %w", s.cluster, err)
}
