package propagation

import (
	"context"
	"errors"
	"fmt"

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

// labels returns the labels of the agent's own FederatedCluster on the
// host, which the agent may read (and no other).
func (s *agentSide) labels(ctx context.Context) (map[string]string, error) {
	fc := &corev1beta1.FederatedCluster{}
	err := s.host.Get(ctx, types.NamespacedName{Name: s.cluster}, fc)
	if apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("reading the labels of FederatedCluster %s, which a waiver's clusterSelector selects on: %w; "+
			"an agent joined before Fedwarden let agents read their own FederatedCluster gets that right when the cluster is joined again", s.cluster, err)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the labels of FederatedCluster %s, which a waiver's clusterSelector selects on: %w", s.cluster, err)
	}
	return fc.Labels, nil
}
