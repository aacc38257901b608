package clusterhealth

import (
	"context"
	"fmt"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// duplicateOf returns the name of the FederatedCluster that holds the same
// cluster ID as fc and was created before it ("" if none): fc is then a
// second name of a cluster joined before. Another cluster's ID is the one
// this controller last read for it, else the one in its status (after a
// restart); a cluster being deleted does not count.
func (r *Reconciler) duplicateOf(ctx context.Context, fc *corev1beta1.FederatedCluster, id string) (string, error) {
	r.mu.Lock()
	r.ids[fc.Name] = id
	known := make(map[string]string, len(r.ids))
	for name, id := range r.ids {
		known[name] = id
	}
	r.mu.Unlock()
	var list corev1beta1.FederatedClusterList
	if err := r.client.List(ctx, &list); err != nil {
		return "", fmt.Errorf("listing FederatedClusters to find other names of cluster %s: %w", fc.Name, err)
	}
	return firstOf(list.Items, fc, id, known), nil
}

// firstOf returns the name of the cluster of clusters, other than fc and not
// being deleted, that has the cluster ID id and was joined before fc, the
// first of them if several; "" if none. known holds the IDs last read,
// which win over those in the clusters' status.
func firstOf(clusters []corev1beta1.FederatedCluster, fc *corev1beta1.FederatedCluster, id string, known map[string]string) string {
	var first *corev1beta1.FederatedCluster
	for i := range clusters {
		other := &clusters[i]
		if other.Name == fc.Name || !other.DeletionTimestamp.IsZero() {
			continue
		}
		otherID, ok := known[other.Name]
		if !ok {
			otherID = other.Status.ClusterID
		}
		if otherID != id || !joinedBefore(other, fc) {
			continue
		}
		if first == nil || joinedBefore(other, first) {
			first = other
		}
	}
	if first == nil {
		return ""
	}
	return first.Name
}

// joinedBefore orders FederatedClusters by creation, then by name, so that
// of two names of one cluster exactly one is the first.
func joinedBefore(a, b *corev1beta1.FederatedCluster) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return a.Name < b.Name
}
