package shard

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	coordinationv1listers "k8s.io/client-go/listers/coordination/v1"
	"k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ErrLeaseLost is returned by Start when this replica could not renew its
// Lease within RenewDeadline: it has stopped serving every cluster, and
// the others take them over once the Lease expires. Like a lost leader
// election, it should end the process, so that no write still in flight
// outlives the Lease.
var ErrLeaseLost = errors.New("the replica's Lease could not be renewed in time")

// Membership is this replica's place among the replicas: it announces the
// replica with a Lease, watches the others' Leases, and tells which
// clusters this replica serves. Start runs it; the other methods may be
// called from any goroutine, before or after Start.
type Membership struct {
	kube   kubernetes.Interface
	leases coordinationv1client.LeaseInterface
	opts   Options
	name   string
	now    func() time.Time
	// wake makes Start look again: the clusters changed, a hold ended or
	// another replica's Lease changed.
	wake chan struct{}

	mu       sync.Mutex
	clusters []string
	served   map[string]bool
	holds    map[string]int
	// fresh is when the last successful renewal stops covering this
	// replica: until then, and only then, it may serve.
	fresh time.Time

	// Owned by Start's goroutine.
	seen      sightings
	lease     *coordinationv1.Lease // as last written or read
	published []string              // the claims the Lease lists
	renewed   time.Time             // when the last successful renewal was sent
	failing   bool
}

var (
	_ manager.Runnable               = (*Membership)(nil)
	_ manager.LeaderElectionRunnable = (*Membership)(nil)
)

// New returns the Membership of the replica opts.Identity, which reads and
// writes Leases with kube. It serves nothing until Start runs and
// SetClusters has named the clusters.
func New(kube kubernetes.Interface, opts Options) (*Membership, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Membership{
		kube:   kube,
		leases: kube.CoordinationV1().Leases(opts.Namespace),
		opts:   opts,
		name:   LeaseName(opts.Identity),
		now:    time.Now,
		wake:   make(chan struct{}, 1),
		served: map[string]bool{},
		holds:  map[string]int{},
		seen:   sightings{},
	}, nil
}

// SetClusters names the clusters the replicas share: every member cluster.
// Call it whenever they change.
func (m *Membership) SetClusters(clusters []string) {
	clusters = unique(clusters)
	m.mu.Lock()
	same := slices.Equal(m.clusters, clusters)
	m.clusters = clusters
	m.mu.Unlock()
	if !same {
		m.poke() // the same clusters again change no assignment
	}
}

// Serves reports whether this replica serves cluster now. Use it to skip
// the work of clusters served elsewhere; guard each write with Acquire.
func (m *Membership) Serves(cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.serves(cluster)
}

// serves is Serves with mu held.
func (m *Membership) serves(cluster string) bool {
	return m.served[cluster] && m.now().Before(m.fresh)
}

// Acquire reports whether this replica serves cluster and, when it does,
// holds the cluster until release is called: a replica that loses the
// cluster stops at once for new work (Serves is false) but keeps its Lease
// listing the cluster, so that nobody else starts, until every hold has
// been released. Hold a cluster across each write to it, and release it
// promptly: a hold on a hung member delays the cluster's handover.
func (m *Membership) Acquire(cluster string) (release func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.serves(cluster) {
		return nil, false
	}
	m.holds[cluster]++
	var once sync.Once
	return func() { once.Do(func() { m.unhold(cluster) }) }, true
}

// unhold ends one hold on cluster.
func (m *Membership) unhold(cluster string) {
	m.mu.Lock()
	m.holds[cluster]--
	if m.holds[cluster] <= 0 {
		delete(m.holds, cluster)
	}
	m.mu.Unlock()
	m.poke()
}

// Served returns the clusters this replica serves now, sorted.
func (m *Membership) Served() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for c := range m.served {
		if m.serves(c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// NeedLeaderElection is false: every replica announces itself and serves
// its share, the leader included.
func (m *Membership) NeedLeaderElection() bool { return false }

// poke makes Start look again, without blocking.
func (m *Membership) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start watches the replicas' Leases and renews this replica's until ctx
// ends, serving the clusters the assignment gives it as the rule of the
// package's documentation allows. When ctx ends it stops serving and, with
// ReleaseOnCancel, releases its Lease once every hold has been released
// (waiting at most RenewDeadline). It returns ErrLeaseLost when a renewal
// failed for RenewDeadline.
func (m *Membership) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithValues("lease", m.name, "namespace", m.opts.Namespace)
	ctx = ctrl.LoggerInto(ctx, log)
	lister, stopWatch, err := m.watch(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before the first list: nothing was announced
		}
		return err
	}
	defer stopWatch()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return m.stop(ctx)
		case <-m.wake:
		case <-timer.C:
		}
		if ctx.Err() != nil {
			return m.stop(ctx)
		}
		next, err := m.step(ctx, lister)
		if err != nil {
			m.dropAll()
			return err
		}
		timer.Reset(next)
	}
}

// watch starts an informer on the replicas' Leases, each change of which
// (but this replica's own writes) wakes Start, and waits until it has
// listed them.
func (m *Membership) watch(ctx context.Context) (coordinationv1listers.LeaseNamespaceLister, func(), error) {
	factory := informers.NewSharedInformerFactoryWithOptions(m.kube, 0, informers.WithNamespace(m.opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelReplica + "=true" }))
	leases := factory.Coordination().V1().Leases()
	wakeOnOthers := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil && key != m.opts.Namespace+"/"+m.name {
			m.poke()
		}
	}
	if _, err := leases.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    wakeOnOthers,
		UpdateFunc: func(_, obj any) { wakeOnOthers(obj) },
		DeleteFunc: wakeOnOthers,
	}); err != nil {
		return nil, nil, fmt.Errorf("watching the replicas' Leases: %w", err)
	}
	watchCtx, cancel := context.WithCancel(ctx)
	factory.Start(watchCtx.Done())
	stop := func() { cancel(); factory.Shutdown() }
	if !cache.WaitForCacheSync(ctx.Done(), leases.Informer().HasSynced) {
		stop()
		return nil, nil, fmt.Errorf("listing the replicas' Leases in %s: %w", m.opts.Namespace, context.Cause(ctx))
	}
	return leases.Lister().Leases(m.opts.Namespace), stop, nil
}

// step looks at the Leases once: it drops the clusters assigned elsewhere,
// renews the Lease with its claims, and starts serving the clusters
// assigned here that no other live replica claims. It returns when to
// look again.
func (m *Membership) step(ctx context.Context, lister coordinationv1listers.LeaseNamespaceLister) (time.Duration, error) {
	now := m.now()
	if !m.renewed.IsZero() && !now.Before(m.renewed.Add(m.opts.RenewDeadline)) {
		return 0, fmt.Errorf("%w: not renewed since %s", ErrLeaseLost, m.renewed.Format(time.RFC3339Nano))
	}
	leases, err := lister.List(labels.Everything())
	if err != nil {
		return 0, fmt.Errorf("listing the replicas' Leases from the cache: %w", err)
	}
	others := m.others(leases, now)
	live := []string{m.opts.Identity}
	for _, r := range others {
		if r.live(now) {
			live = append(live, r.identity)
		}
	}
	m.mu.Lock()
	clusters := m.clusters
	m.mu.Unlock()
	p := m.apply(mine(Assign(clusters, live), m.opts.Identity))
	if len(p.drop) > 0 {
		ctrl.LoggerFrom(ctx).Info("Stopped serving clusters assigned to other replicas", "clusters", p.drop, "replicas", live)
	}
	m.notify(p.drop, false)

	// A renewal that failed may have been stored: write again.
	if m.failing || !slices.Equal(p.claims, m.published) || !now.Before(m.renewed.Add(m.opts.RetryPeriod)) {
		err := m.announce(ctx, p.claims)
		if ctx.Err() != nil {
			return 0, nil // stopping: Start releases the Lease
		}
		m.reportRenewal(ctx, err)
		if err != nil {
			return m.opts.RetryPeriod, nil
		}
	}
	if len(p.pending) > 0 {
		free, err := m.unclaimed(ctx, p.pending)
		if ctx.Err() != nil {
			return 0, nil
		}
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the replicas' Leases failed; the clusters newly assigned to this replica wait", "clusters", p.pending)
			return m.opts.RetryPeriod, nil
		}
		m.gain(ctx, free)
	}
	return m.nextLook(others, m.now()), nil
}

// others reads the Leases of the other replicas, sighted at now.
func (m *Membership) others(leases []*coordinationv1.Lease, now time.Time) []replica {
	present := make(map[string]bool, len(leases))
	var out []replica
	for _, lease := range leases {
		present[lease.Name] = true
		if lease.Name == m.name {
			continue
		}
		if r, ok := m.seen.read(lease, now); ok {
			out = append(out, r)
		}
	}
	m.seen.forget(present)
	return out
}

// mine returns the clusters assigned to identity, sorted.
func mine(assigned map[string]string, identity string) []string {
	var out []string
	for c, r := range assigned {
		if r == identity {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// plan is what one look decides.
type plan struct {
	// drop are the clusters served here but now assigned elsewhere: this
	// replica stops serving them at once.
	drop []string
	// pending are the clusters assigned here and not served yet: this
	// replica serves each once no other live replica claims it.
	pending []string
	// claims are what this replica's Lease lists: the clusters assigned
	// here, and those still held.
	claims []string
}

// decide returns the plan for want, the clusters assigned to this
// replica, given those it serves and those it holds.
func decide(want []string, served map[string]bool, holds map[string]int) plan {
	var p plan
	for c := range served {
		if !slices.Contains(want, c) {
			p.drop = append(p.drop, c)
		}
	}
	claims := map[string]bool{}
	for _, c := range want {
		claims[c] = true
		if !served[c] {
			p.pending = append(p.pending, c)
		}
	}
	for c := range holds {
		claims[c] = true
	}
	p.claims = slices.Sorted(maps.Keys(claims))
	slices.Sort(p.drop)
	return p
}

// apply decides what to do with want and stops serving the clusters
// dropped, in one critical section: a hold taken after it is on a cluster
// still assigned here, so the claims always cover every hold.
func (m *Membership) apply(want []string) plan {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := decide(want, m.served, m.holds)
	for _, c := range p.drop {
		delete(m.served, c)
	}
	return p
}

// unclaimed returns the clusters of pending that no other live replica's
// Lease lists. It reads the Leases from the API server, not the cache,
// after this replica's own claims were written: of two replicas that claim
// a cluster at the same time, at least one then sees the other's claim and
// waits.
func (m *Membership) unclaimed(ctx context.Context, pending []string) ([]string, error) {
	list, err := m.leases.List(ctx, metav1.ListOptions{LabelSelector: LabelReplica + "=true"})
	if err != nil {
		return nil, fmt.Errorf("listing the replicas' Leases in %s: %w", m.opts.Namespace, err)
	}
	now := m.now()
	free := slices.Clone(pending)
	for i := range list.Items {
		lease := &list.Items[i]
		if lease.Name == m.name {
			continue
		}
		if r, ok := m.seen.read(lease, now); ok && r.live(now) {
			free = slices.DeleteFunc(free, r.claimsCluster)
		}
	}
	return free, nil
}

// gain starts serving clusters, if they are still claimed and the Lease
// is still fresh.
func (m *Membership) gain(ctx context.Context, clusters []string) {
	m.mu.Lock()
	var gained []string
	for _, c := range clusters {
		if slices.Contains(m.published, c) && m.now().Before(m.fresh) {
			m.served[c] = true
			gained = append(gained, c)
		}
	}
	m.mu.Unlock()
	if len(gained) > 0 {
		ctrl.LoggerFrom(ctx).Info("Serving clusters", "clusters", gained)
	}
	m.notify(gained, true)
}

// dropAll stops serving every cluster.
func (m *Membership) dropAll() {
	m.mu.Lock()
	dropped := slices.Sorted(maps.Keys(m.served))
	clear(m.served)
	m.fresh = time.Time{}
	m.mu.Unlock()
	m.notify(dropped, false)
}

// notify calls OnChange for each of clusters.
func (m *Membership) notify(clusters []string, serves bool) {
	if m.opts.OnChange == nil {
		return
	}
	for _, c := range clusters {
		m.opts.OnChange(c, serves)
	}
}

// nextLook is how long until the next look: the next renewal, or the
// next expiry of a live Lease, whichever comes first. A claim that goes
// away wakes Start at once, as a change of its Lease.
func (m *Membership) nextLook(others []replica, now time.Time) time.Duration {
	next := m.renewed.Add(m.opts.RetryPeriod)
	for _, r := range others {
		if r.live(now) && r.expires.Before(next) {
			next = r.expires
		}
	}
	return max(next.Sub(now), time.Millisecond)
}

// reportRenewal logs when renewals start failing and when they work
// again, not every time.
func (m *Membership) reportRenewal(ctx context.Context, err error) {
	log := ctrl.LoggerFrom(ctx)
	switch {
	case err != nil && !m.failing:
		log.Error(err, "Renewing the replica's Lease failed; this replica stops serving its clusters if this goes on", "renewDeadline", m.opts.RenewDeadline)
	case err == nil && m.failing:
		log.Info("Renewing the replica's Lease works again")
	}
	m.failing = err != nil
}

// stop stops serving and, with ReleaseOnCancel, releases the Lease once
// the holds are released, so that the others take over at once.
func (m *Membership) stop(ctx context.Context) error {
	m.dropAll()
	if !m.opts.ReleaseOnCancel || m.renewed.IsZero() {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.RenewDeadline)
	defer cancel()
	if !m.waitForHolds(ctx) {
		log.Info("Clusters still held at shutdown; the Lease is left to expire", "leaseDuration", m.opts.LeaseDuration)
		return nil
	}
	if err := m.releaseLease(ctx); err != nil {
		return fmt.Errorf("releasing the replica's Lease: %w", err)
	}
	return nil
}

// waitForHolds waits until no cluster is held, or ctx ends.
func (m *Membership) waitForHolds(ctx context.Context) bool {
	for {
		m.mu.Lock()
		held := len(m.holds)
		m.mu.Unlock()
		if held == 0 {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-m.wake:
		}
	}
}
