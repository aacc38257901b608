package console

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// view is what one identity sees of the host: caches fed by watches made
// with its own credentials, the fleet index built from them, and the
// live-update stream of its pages. Nothing in a view is ever read with
// another identity's credentials.
type view struct {
	// id is the identity's key: "local", or a digest of the token.
	id string
	// client makes the identity's reads and writes that are not cached.
	client client.WithWatch
	// controlPlane is the host's control-plane namespace.
	controlPlane string

	ix                     *index
	hub                    *hub
	cpvs, clusters, leases *watched

	ctx      context.Context
	cancel   context.CancelFunc
	lastUsed atomic.Int64

	// confirmedAt is when the host last confirmed the identity: that it
	// accepts its credentials and lets it list what the view caches.
	confirmedAt atomic.Int64
	confirmMu   sync.Mutex
}

// viewConfig is what a view needs besides its identity.
type viewConfig struct {
	// controlPlane is the host's control-plane namespace.
	controlPlane string
	// maxObjects bounds the objects the view caches; full is called, once,
	// when they exceed it.
	maxObjects int64
	full       func(*view)
}

// startView starts the caches of the identity cfg authenticates as, which
// the host has just confirmed.
func startView(parent context.Context, id string, cfg *rest.Config, vc viewConfig) (*view, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: clientScheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client of the host: %w", err)
	}
	ctx, cancel := context.WithCancel(parent)
	v := &view{id: id, client: c, controlPlane: vc.controlPlane, ix: newIndex(), hub: newHub(), ctx: ctx, cancel: cancel}
	v.touch()
	v.confirmedAt.Store(time.Now().UnixNano())
	if err := v.watch(c, &objectLimit{max: vc.maxObjects, full: func() { vc.full(v) }}); err != nil {
		cancel()
		return nil, err
	}
	for _, w := range v.all() {
		go w.informer.RunWithContext(ctx)
	}
	return v, nil
}

// watch makes the view's informers, and has their events kept in its index
// and published on its streams.
func (v *view) watch(c client.WithWatch, limit *objectLimit) error {
	var err error
	if v.cpvs, err = newWatched(c, &typesv1beta1.ClusterPropagatedVersionList{}, &typesv1beta1.ClusterPropagatedVersion{},
		typesv1beta1.GroupVersion.WithResource("clusterpropagatedversions").GroupResource(), "", "ClusterPropagatedVersions in all namespaces", limit); err != nil {
		return err
	}
	if v.clusters, err = newWatched(c, &corev1beta1.FederatedClusterList{}, &corev1beta1.FederatedCluster{},
		corev1beta1.GroupVersion.WithResource("federatedclusters").GroupResource(), "", "FederatedClusters", limit); err != nil {
		return err
	}
	if v.leases, err = newWatched(c, &coordinationv1.LeaseList{}, &coordinationv1.Lease{}, schema.GroupResource{Group: coordinationv1.GroupName, Resource: "leases"},
		v.controlPlane, "Leases in namespace "+v.controlPlane+" (the agents' of Pull clusters)", limit); err != nil {
		return err
	}
	if err := v.cpvs.handle(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.cpvChanged(obj) },
		UpdateFunc: func(_, obj any) { v.cpvChanged(obj) },
		DeleteFunc: v.cpvDeleted,
	}); err != nil {
		return err
	}
	if err := v.clusters.handle(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.clusterChanged(obj, false) },
		UpdateFunc: func(_, obj any) { v.clusterChanged(obj, false) },
		DeleteFunc: func(obj any) { v.clusterChanged(obj, true) },
	}); err != nil {
		return err
	}
	return v.leases.handle(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.leaseChanged(obj) },
		UpdateFunc: func(_, obj any) { v.leaseChanged(obj) },
		DeleteFunc: func(obj any) { v.leaseChanged(obj) },
	})
}

func (v *view) all() []*watched { return []*watched{v.cpvs, v.clusters, v.leases} }

// stop stops the caches and ends the view's streams.
func (v *view) stop() {
	v.cancel()
	v.hub.close()
}

func (v *view) touch() { v.lastUsed.Store(time.Now().UnixNano()) }

// idleSince is when the view was last used; a view with a stream open is
// in use.
func (v *view) idleSince() time.Time {
	if v.hub.subscribers() > 0 {
		return time.Now()
	}
	return time.Unix(0, v.lastUsed.Load())
}

// wait waits until the caches have listed once, or failed to, or until
// timeout: a page then shows what there is, and why something is missing.
func (v *view) wait(ctx context.Context, timeout time.Duration) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		done := true
		for _, w := range v.all() {
			if !w.synced() && w.problem() == "" {
				done = false
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-v.ctx.Done(): // stopped: its caches will not list
			return
		case <-deadline.C:
			return
		case <-tick.C:
		}
	}
}

// problems say what the identity cannot see, among what.
func (v *view) problems(what ...*watched) []string {
	var out []string
	for _, w := range what {
		if p := w.problem(); p != "" {
			out = append(out, p)
		} else if !w.synced() {
			out = append(out, "still listing "+w.what)
		}
	}
	return out
}

// errLostRights: the host refuses the identity a kind its view cached.
var errLostRights = errors.New("the host no longer lets you read what the console cached for you")

// stale says why the view may not serve any more, from what its informers
// heard: errSignIn when the host no longer accepts the identity,
// errLostRights when it refuses a kind the view listed; nil otherwise.
func (v *view) stale() error {
	for _, w := range v.all() {
		if w.unauthorized() {
			return errSignIn
		}
		if w.forbiddenSinceListed() {
			return fmt.Errorf("%w: %s", errLostRights, w.what)
		}
	}
	return nil
}

// recheck asks the host again, when it last confirmed the identity longer
// than every ago, whether it still accepts the identity (errSignIn if not)
// and still lets it list each kind the view listed (errLostRights if not).
// Informers do not tell: a watch outlives the revocation of its token and
// the removal of its rights.
func (v *view) recheck(ctx context.Context, every time.Duration) error {
	if v.confirmedWithin(every) {
		return nil
	}
	v.confirmMu.Lock()
	defer v.confirmMu.Unlock()
	if v.confirmedWithin(every) {
		return nil
	}
	if _, err := selfReview(ctx, v.client); err != nil {
		return err
	}
	for _, w := range v.all() {
		if !w.synced() {
			continue
		}
		allowed, err := mayList(ctx, v.client, w.resource, w.namespace)
		if err != nil {
			return err
		}
		if !allowed {
			return fmt.Errorf("%w: %s", errLostRights, w.what)
		}
	}
	v.confirmedAt.Store(time.Now().UnixNano())
	return nil
}

func (v *view) confirmedWithin(d time.Duration) bool {
	return time.Since(time.Unix(0, v.confirmedAt.Load())) < d
}

// recheckWhileStreaming rechecks the identity as recheck does, looking a
// quarter of the interval after it is due at the latest, while a page of
// it holds a stream open (a stream makes no request that would), until the
// view stops; it calls drop when the host refuses the identity.
func (v *view) recheckWhileStreaming(every, timeout time.Duration, drop func(*view)) {
	t := time.NewTicker(max(every/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-t.C:
		}
		if v.hub.subscribers() == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(v.ctx, timeout)
		err := v.recheck(ctx, every)
		cancel()
		if errors.Is(err, errSignIn) || errors.Is(err, errLostRights) {
			drop(v)
			return
		}
	}
}

func (v *view) cpvChanged(obj any) {
	cpv, ok := obj.(*typesv1beta1.ClusterPropagatedVersion)
	if !ok {
		return
	}
	r := v.ix.upsert(cpv)
	v.hub.publish(v.rowEvent(r))
}

func (v *view) cpvDeleted(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	cpv, ok := obj.(*typesv1beta1.ClusterPropagatedVersion)
	if !ok {
		return
	}
	r := newRow(cpv)
	v.ix.remove(r.key)
	v.hub.publish(event{name: "removed", resource: r, data: mustJSON(map[string]string{"id": r.id})})
}

func (v *view) clusterChanged(obj any, deleted bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	fc, ok := obj.(*corev1beta1.FederatedCluster)
	if !ok {
		return
	}
	if deleted {
		v.ix.setCluster(fc.Name, nil)
	} else {
		v.ix.setCluster(fc.Name, fc)
	}
	v.hub.publish(event{name: "clusters", data: mustJSON(map[string]string{"cluster": fc.Name})})
}

func (v *view) leaseChanged(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if l, ok := obj.(*coordinationv1.Lease); ok && strings.HasPrefix(l.Name, registration.AgentPrefix) {
		v.hub.publish(event{name: "clusters", data: mustJSON(map[string]string{"lease": l.Name})})
	}
}

// rowEvent is the live update of a row: every cell it has.
func (v *view) rowEvent(r *row) event {
	v.ix.mu.RLock()
	columns := make([]string, 0, len(r.cells))
	for _, c := range r.cells {
		columns = append(columns, c.cluster)
	}
	fr := v.ix.fleetRow(r, columns)
	v.ix.mu.RUnlock()
	return event{name: "row", resource: r, data: mustJSON(fr)}
}

// lease returns the Lease of cluster's agent from the cache; nil when
// there is none.
func (v *view) lease(cluster string) *coordinationv1.Lease {
	obj, ok, err := v.leases.informer.GetStore().GetByKey(v.controlPlane + "/" + leaseName(cluster))
	if err != nil || !ok {
		return nil
	}
	l, _ := obj.(*coordinationv1.Lease)
	return l
}
