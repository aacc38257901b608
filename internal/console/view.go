package console

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
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
}

// startView starts the caches of the identity cfg authenticates as.
func startView(parent context.Context, id string, cfg *rest.Config, controlPlane string) (*view, error) {
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client of the host: %w", err)
	}
	ctx, cancel := context.WithCancel(parent)
	v := &view{id: id, client: c, controlPlane: controlPlane, ix: newIndex(), hub: newHub(), ctx: ctx, cancel: cancel}
	v.touch()
	v.cpvs = newWatched(c, &typesv1beta1.ClusterPropagatedVersionList{}, &typesv1beta1.ClusterPropagatedVersion{}, "",
		"ClusterPropagatedVersions in all namespaces")
	v.clusters = newWatched(c, &corev1beta1.FederatedClusterList{}, &corev1beta1.FederatedCluster{}, "", "FederatedClusters")
	v.leases = newWatched(c, &coordinationv1.LeaseList{}, &coordinationv1.Lease{}, controlPlane, "Leases in namespace "+controlPlane+" (the agents' of Pull clusters)")
	if _, err := v.cpvs.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.cpvChanged(obj) },
		UpdateFunc: func(_, obj any) { v.cpvChanged(obj) },
		DeleteFunc: v.cpvDeleted,
	}); err != nil {
		cancel()
		return nil, err
	}
	if _, err := v.clusters.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.clusterChanged(obj, false) },
		UpdateFunc: func(_, obj any) { v.clusterChanged(obj, false) },
		DeleteFunc: func(obj any) { v.clusterChanged(obj, true) },
	}); err != nil {
		cancel()
		return nil, err
	}
	if _, err := v.leases.informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.leaseChanged(obj) },
		UpdateFunc: func(_, obj any) { v.leaseChanged(obj) },
		DeleteFunc: func(obj any) { v.leaseChanged(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	for _, w := range v.all() {
		go w.informer.RunWithContext(ctx)
	}
	return v, nil
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

// unauthorized tells whether the host no longer accepts the identity.
func (v *view) unauthorized() bool {
	for _, w := range v.all() {
		if w.unauthorized() {
			return true
		}
	}
	return false
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
