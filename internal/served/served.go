// Package served runs, in a controller-manager replica that does not lead,
// the syncs of the Push clusters the replica serves when replicas share
// the member clusters (package shard). For each such cluster it runs, for
// every enabled type, the code a Pull cluster's agent runs
// (propagation.NewServed): it applies what the leader wrote in the CPVs'
// spec and writes that cluster's entries of the CPVs. The leader places
// every resource and writes the clusters it serves itself; when this
// replica becomes the leader, it stops every run here first (HandedOff).
//
// A run stops when the replica stops serving its cluster (after the syncs
// in flight, which hold the cluster, have ended), when the cluster's
// clients are rebuilt (a new credential: the run starts again with them),
// and when the process stops.
package served

import (
	"context"
	"slices"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
)

// Shard is the replica's share of the clusters (shard.Membership).
type Shard interface {
	propagation.Shard
	// SetClusters names the clusters the replicas share.
	SetClusters(clusters []string)
	// Served returns the clusters this replica serves now.
	Served() []string
}

// lookAgain is how often the runs are compared with the served clusters
// even without a change: a served cluster whose clients are not built yet
// (its first probe) is started then.
const lookAgain = time.Second

// Runner runs the syncs of the clusters this replica serves while it does
// not lead. It is a manager.Runnable on every replica.
type Runner struct {
	mgr     manager.Manager
	members *clustercache.Cache
	shard   Shard
	opts    propagation.Options

	wake      chan struct{}
	handedOff chan struct{}
	// runs are owned by Start's goroutine; nil once handed off.
	runs map[string]*run
}

// run is the syncs of one served cluster.
type run struct {
	member *clustercache.Member
	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ manager.Runnable               = (*Runner)(nil)
	_ manager.LeaderElectionRunnable = (*Runner)(nil)
)

// New returns the Runner of the clusters shard gives this replica, whose
// clients members holds (the health controller builds them when it first
// probes a cluster). opts are the propagation options of the runs; they
// carry no dependencies stage, which is the leader's.
func New(mgr manager.Manager, members *clustercache.Cache, shard Shard, opts propagation.Options) *Runner {
	opts.Shard = shard
	opts.Dependencies = nil
	return &Runner{mgr: mgr, members: members, shard: shard, opts: opts,
		wake: make(chan struct{}, 1), handedOff: make(chan struct{}), runs: map[string]*run{}}
}

// NeedLeaderElection is false: every replica serves its share.
func (r *Runner) NeedLeaderElection() bool { return false }

// Poke makes the Runner look at the served clusters now, without
// blocking: call it when the replica starts or stops serving one.
func (r *Runner) Poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// HandedOff is closed once this replica leads and has stopped every run:
// its own propagation controllers may start then.
func (r *Runner) HandedOff() <-chan struct{} { return r.handedOff }

// Start keeps the runs in step with the served clusters until the replica
// leads, and names the Push clusters to the shard as they change, until
// ctx ends.
func (r *Runner) Start(ctx context.Context) error {
	if err := r.watchClusters(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(lookAgain)
	defer tick.Stop()
	elected := r.mgr.Elected()
	for {
		r.feed(ctx)
		select {
		case <-elected:
			if r.runs != nil {
				r.converge(ctx, nil)
				r.runs = nil
				close(r.handedOff)
				ctrl.Log.WithName("served").Info("Leading: the clusters this replica serves are written by its propagation controllers from now on")
			}
		default:
			r.converge(ctx, r.shard.Served())
		}
		select {
		case <-ctx.Done():
			r.converge(ctx, nil)
			return nil
		case <-r.electedOnce(elected):
		case <-r.wake:
		case <-tick.C:
		}
	}
}

// electedOnce is elected until the Runner has handed off, then a channel
// that never closes: the leader keeps naming the clusters to the shard.
func (r *Runner) electedOnce(elected <-chan struct{}) <-chan struct{} {
	if r.runs == nil {
		return nil
	}
	return elected
}

// watchClusters pokes the Runner on every FederatedCluster change, so
// that the shard learns of joins and unjoins at once.
func (r *Runner) watchClusters(ctx context.Context) error {
	inf, err := r.mgr.GetCache().GetInformer(ctx, &corev1beta1.FederatedCluster{})
	if err != nil {
		return err
	}
	poke := func(any) { r.Poke() }
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, _ any) { r.Poke() },
	})
	return err
}

// feed names the joined Push clusters to the shard: Pull clusters are
// written by their agents, and their Leases are watched by the leader.
func (r *Runner) feed(ctx context.Context) {
	var list corev1beta1.FederatedClusterList
	if err := r.mgr.GetClient().List(ctx, &list); err != nil {
		ctrl.Log.WithName("served").Error(err, "Listing the FederatedClusters the replicas share")
		return
	}
	var names []string
	for _, fc := range list.Items {
		if fc.Spec.SyncMode != corev1beta1.SyncModePull && fc.DeletionTimestamp.IsZero() {
			names = append(names, fc.Name)
		}
	}
	r.shard.SetClusters(names)
}

// converge stops the runs of clusters not in want, and those whose run
// ended or whose clients were rebuilt, then starts a run for each cluster
// of want that has none and whose clients are built.
func (r *Runner) converge(ctx context.Context, want []string) {
	if r.runs == nil {
		return
	}
	var wg sync.WaitGroup
	for name, run := range r.runs {
		member, err := r.members.Get(name)
		if slices.Contains(want, name) && !run.ended() && err == nil && member == run.member {
			continue
		}
		delete(r.runs, name)
		run.cancel()
		wg.Go(func() { <-run.done })
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	for _, name := range want {
		if _, ok := r.runs[name]; ok {
			continue
		}
		member, err := r.members.Get(name)
		if err != nil {
			continue // not probed yet: the next look starts it
		}
		r.runs[name] = r.start(ctx, member)
	}
}

// start runs the syncs of member's cluster until ctx ends, the run is
// cancelled, or the member's clients are rebuilt.
func (r *Runner) start(ctx context.Context, member *clustercache.Member) *run {
	rctx, cancel := context.WithCancel(ctx)
	stopWithMember := context.AfterFunc(member.Context(), cancel)
	ru := &run{member: member, cancel: cancel, done: make(chan struct{})}
	log := ctrl.Log.WithName("served").WithValues("cluster", member.Name)
	types := typeconfig.NewAgentReconciler(r.mgr, r.opts.Health, func(typ propagation.Type) (*propagation.Controller, error) {
		return propagation.NewServed(r.mgr, typ, member, r.opts)
	})
	go func() {
		defer close(ru.done)
		defer stopWithMember()
		log.Info("Serving the cluster")
		if err := types.Run(ctrl.LoggerInto(rctx, log), "served-"+member.Name); err != nil && rctx.Err() == nil {
			log.Error(err, "The syncs of the cluster stopped; they start again at the next look")
		}
		log.Info("Stopped serving the cluster")
	}()
	return ru
}

// ended tells whether the run has stopped by itself.
func (ru *run) ended() bool {
	select {
	case <-ru.done:
		return true
	default:
		return false
	}
}
