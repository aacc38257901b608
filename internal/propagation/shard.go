package propagation

import (
	"maps"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
)

// Shard is the share of the Push clusters that this controller-manager
// replica serves, when several replicas share the members (package
// shard's Membership). The leader places every resource and writes the
// clusters it serves itself; a cluster another replica serves is written
// by that replica from the CPV's spec, as a Pull cluster is by its agent
// (NewServed), and the leader treats it as it treats a Pull cluster.
type Shard interface {
	// Serves tells whether this replica serves cluster now.
	Serves(cluster string) bool
	// Acquire holds cluster across one write to it; false when this
	// replica does not serve it (any more).
	Acquire(cluster string) (release func(), ok bool)
}

// servedElsewhere marks, in one sync's view of the joined clusters (a copy
// listClusters makes, never written), a Push cluster another replica
// serves: isPull is true of it.
const servedElsewhere = "fedwarden.io/served-elsewhere"

// ClusterFieldManager is the field manager of a Push cluster's entries of
// the CPVs when a replica other than the leader writes them: the same on
// every replica, so that a cluster handed from one replica to another
// keeps its entries' owner.
func ClusterFieldManager(cluster string) string { return "fedwarden-cluster-" + cluster }

// shardView returns set with the Push clusters this replica does not serve
// marked servedElsewhere, and with the mark taken off any stored object
// that carries it: the mark is this process's own note, and an annotation
// someone wrote on a FederatedCluster must not make the host stop writing
// the cluster. set itself when nothing is to mark or unmark.
func (r *Reconciler) shardView(set clusterSet) clusterSet {
	sharing := r.opts.Shard != nil && r.agent == nil
	var view clusterSet
	for name, fc := range set {
		elsewhere := sharing && fc.Spec.SyncMode != corev1beta1.SyncModePull && !r.opts.Shard.Serves(name)
		_, stored := fc.Annotations[servedElsewhere]
		if !elsewhere && !stored {
			continue
		}
		if view == nil {
			view = maps.Clone(set)
		}
		if elsewhere {
			fc = markedElsewhere(fc)
		} else {
			fc = fc.DeepCopy()
			delete(fc.Annotations, servedElsewhere)
		}
		view[name] = fc
	}
	if view == nil {
		return set
	}
	return view
}

// hold holds the Push cluster name (fc; nil when it left the federation)
// across a write to it (Shard.Acquire). Without a shard, and for a cluster
// that left, which no replica serves, it is held at once. A false ok means
// another replica serves the cluster now: nothing is written to it.
func hold(shard Shard, name string, fc *corev1beta1.FederatedCluster) (release func(), ok bool) {
	if shard == nil || fc == nil {
		return func() {}, true
	}
	return shard.Acquire(name)
}

// markedElsewhere is a copy of fc marked servedElsewhere.
func markedElsewhere(fc *corev1beta1.FederatedCluster) *corev1beta1.FederatedCluster {
	fc = fc.DeepCopy()
	if fc.Annotations == nil {
		fc.Annotations = map[string]string{}
	}
	fc.Annotations[servedElsewhere] = "true"
	return fc
}
