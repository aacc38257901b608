package controllermanager

import (
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/clusterhealth"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/served"
	"github.com/fedwarden/fedwarden/internal/shard"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
)

// sharing is what --share-clusters adds: the replica's Membership, and the
// runs of the clusters it serves while another replica leads.
type sharing struct {
	membership *shard.Membership
	runner     *served.Runner
	health     *clusterhealth.Reconciler
}

// setupSharing adds, under --share-clusters, this replica's Membership to
// the manager, and points the health controller and propagation at it:
// each probes and writes only the clusters the replica serves. federation
// returns the federation controller, which a change of the served
// clusters resyncs on the leader. Nil without --share-clusters.
func setupSharing(mgr ctrl.Manager, members *clustercache.Cache, o *options, federation func() *typeconfig.Reconciler) (*sharing, error) {
	if !o.shareClusters {
		return nil, nil
	}
	kube, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("building the client of the replicas' Leases: %w", err)
	}
	s := &sharing{}
	opts := o.shard
	opts.Owner = podOwner(o.namespace, opts.Identity)
	opts.OnChange = func(cluster string, _ bool) {
		if s.health != nil {
			s.health.Visit(cluster)
		}
		if s.runner != nil {
			s.runner.Poke()
		}
		if f := federation(); f != nil {
			f.ResyncAll(cluster)
		}
	}
	if s.membership, err = shard.New(kube, opts); err != nil {
		return nil, fmt.Errorf("--share-clusters: %w", err)
	}
	if err := mgr.Add(s.membership); err != nil {
		return nil, fmt.Errorf("adding the replica's membership: %w", err)
	}
	o.propagation.Shard = s.membership
	o.health.Serves = func(fc *corev1beta1.FederatedCluster) bool {
		if fc.Spec.SyncMode == corev1beta1.SyncModePull {
			return leads(mgr) // the leader watches the agents' Leases
		}
		return s.membership.Serves(fc.Name)
	}
	return s, nil
}

// start adds the runs of the served clusters, with the propagation options
// opts, and makes the federation controller wait for them to stop when
// this replica leads.
func (s *sharing) start(mgr ctrl.Manager, members *clustercache.Cache, opts propagation.Options, federation *typeconfig.Reconciler) error {
	s.runner = served.New(mgr, members, s.membership, opts)
	if err := mgr.Add(s.runner); err != nil {
		return fmt.Errorf("adding the syncs of the served clusters: %w", err)
	}
	federation.StartAfter(s.runner.HandedOff())
	return nil
}

// podOwner is this replica's Pod as the owner of its Lease, when the
// chart's downward API names it ($POD_NAME, $POD_UID, $POD_NAMESPACE), the
// Pod is the replica named identity, and it runs in the Lease's namespace
// (an owner must be in the same namespace); nil otherwise: the Lease then
// stays after the replica is gone, and counts for nothing.
func podOwner(namespace, identity string) *metav1.OwnerReference {
	name, uid := os.Getenv("POD_NAME"), os.Getenv("POD_UID")
	if name == "" || uid == "" || name != identity || os.Getenv("POD_NAMESPACE") != namespace {
		return nil
	}
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
}

// leads tells whether this replica has been elected leader.
func leads(mgr ctrl.Manager) bool {
	select {
	case <-mgr.Elected():
		return true
	default:
		return false
	}
}
