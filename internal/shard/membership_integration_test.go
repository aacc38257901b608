package shard_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/internal/shard"
	"github.com/fedwarden/fedwarden/test/poll"
)

var clusters = []string{"member-1", "member-2", "member-3", "member-4", "member-5", "member-6"}

// servers records, from every replica's OnChange, which replica serves
// each cluster, and each time a second replica started serving a cluster
// that another still served. A replica calls OnChange after it stops
// serving and before it tells the others, so a handover that waits for the
// previous server is never taken for a double serve.
type servers struct {
	mu       sync.Mutex
	server   map[string]string
	gainedAt map[string]time.Time
	doubles  []string
}

func newServers() *servers {
	return &servers{server: map[string]string{}, gainedAt: map[string]time.Time{}}
}

// onChange is the OnChange of replica.
func (s *servers) onChange(replica string) func(string, bool) {
	return func(cluster string, serves bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case serves && s.server[cluster] != "" && s.server[cluster] != replica:
			s.doubles = append(s.doubles, fmt.Sprintf("%s started serving %s while %s still served it", replica, cluster, s.server[cluster]))
			fallthrough
		case serves:
			s.server[cluster] = replica
			s.gainedAt[cluster] = time.Now()
		case s.server[cluster] == replica:
			delete(s.server, cluster)
		}
	}
}

// are returns a condition that holds once the servers are those of want.
func (s *servers) are(want map[string]string) func(context.Context) (bool, string) {
	return func(context.Context) (bool, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return maps.Equal(s.server, want), fmt.Sprintf("%v, want %v", s.server, want)
	}
}

// check fails the test for every double serve seen.
func (s *servers) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.doubles {
		t.Error(d)
	}
}

// runningReplica is a Membership running in the test's process.
type runningReplica struct {
	*shard.Membership
	identity string
	stop     context.CancelFunc
	done     chan error
	stopped  sync.Once
}

// startReplica runs the Membership of identity in namespace, sharing
// clusters, until the test ends or Stop.
func startReplica(t *testing.T, kube kubernetes.Interface, namespace, identity string, s *servers, change func(*shard.Options)) *runningReplica {
	t.Helper()
	opts := shard.DefaultOptions()
	opts.Namespace, opts.Identity = namespace, identity
	opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	opts.OnChange = s.onChange(identity)
	if change != nil {
		change(&opts)
	}
	m, err := shard.New(kube, opts)
	if err != nil {
		t.Fatal(err)
	}
	m.SetClusters(clusters)
	ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), testr.New(t).WithValues("replica", identity)))
	r := &runningReplica{Membership: m, identity: identity, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- m.Start(ctx) }()
	t.Cleanup(func() { r.Stop(t) })
	return r
}

// Stop cancels the replica's context and waits until Start returns; a
// second Stop does nothing.
func (r *runningReplica) Stop(t *testing.T) {
	t.Helper()
	r.stopped.Do(func() {
		r.stop()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("replica %s: %v", r.identity, err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("replica %s did not stop", r.identity)
		}
	})
}

// setUp makes a namespace of its own for the test's Leases, named after
// prefix, and returns a client and the namespace.
func setUp(t *testing.T, prefix string) (kubernetes.Interface, string) {
	t.Helper()
	needHost(t)
	kube, err := host.Client()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return kube, ns.Name
}

func lease(t *testing.T, kube kubernetes.Interface, namespace, identity string) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases(namespace).Get(t.Context(), shard.LeaseName(identity), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// served says which replica serves each cluster, by asking each replica.
func served(replicas ...*runningReplica) map[string]string {
	out := map[string]string{}
	for _, r := range replicas {
		for _, c := range r.Served() {
			out[c] = r.identity
		}
	}
	return out
}

// TestReplicasShareTheClusters runs three replicas against one host. They
// split six clusters as Assign says, each served by one replica; a replica
// killed without releasing its Lease has its clusters taken over only
// after that Lease expires; one stopped cleanly releases its Lease, and
// its clusters are taken over without waiting for it to expire. No cluster
// has two servers at any time.
func TestReplicasShareTheClusters(t *testing.T) {
	kube, namespace := setUp(t, "shard-share")
	t.Parallel()
	s := newServers()
	defer s.check(t)

	// cm-a is killed: it releases nothing. cm-b stops cleanly, with a Lease
	// ten times longer than the others', so that a takeover that waited for
	// it to expire would show.
	a := startReplica(t, kube, namespace, "cm-a", s, func(o *shard.Options) { o.ReleaseOnCancel = false })
	b := startReplica(t, kube, namespace, "cm-b", s, func(o *shard.Options) { o.LeaseDuration, o.RenewDeadline = 30*time.Second, 20*time.Second })
	c := startReplica(t, kube, namespace, "cm-c", s, nil)

	three := shard.Assign(clusters, []string{"cm-a", "cm-b", "cm-c"})
	poll.Eventually(t, 30*time.Second, "the three replicas to serve the clusters as assigned", s.are(three))
	if got := served(a, b, c); !maps.Equal(got, three) {
		t.Errorf("the replicas say they serve %v, want %v", got, three)
	}
	if n := len(slices.Compact(slices.Sorted(maps.Values(three)))); n < 2 {
		t.Errorf("%d replicas serve, want at least 2: %v", n, three)
	}
	t.Logf("three replicas: %v", three)

	t.Run("a killed replica's clusters move once its Lease expires", func(t *testing.T) {
		a.Stop(t)
		l := lease(t, kube, namespace, "cm-a")
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "cm-a" || l.Annotations[shard.AnnotationClaims] == "[]" {
			t.Fatalf("the killed replica's Lease was released: holder %v, claims %s", l.Spec.HolderIdentity, l.Annotations[shard.AnnotationClaims])
		}
		expired := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		two := shard.Assign(clusters, []string{"cm-b", "cm-c"})
		poll.Eventually(t, 30*time.Second, "cm-b and cm-c to serve every cluster", s.are(two))
		s.mu.Lock()
		defer s.mu.Unlock()
		for cluster, r := range three {
			if r == "cm-a" && s.gainedAt[cluster].Before(expired) {
				t.Errorf("%s took %s over at %s, before cm-a's Lease expired at %s", s.server[cluster], cluster,
					s.gainedAt[cluster].Format(time.StampMicro), expired.Format(time.StampMicro))
			}
		}
	})

	t.Run("a replica stopped cleanly hands its clusters over at once", func(t *testing.T) {
		b.Stop(t)
		l := lease(t, kube, namespace, "cm-b")
		if l.Spec.HolderIdentity != nil || l.Annotations[shard.AnnotationClaims] != "" {
			t.Fatalf("the stopped replica's Lease was not released: holder %v, claims %s", l.Spec.HolderIdentity, l.Annotations[shard.AnnotationClaims])
		}
		// Had it not been released, cm-b's Lease would keep its clusters
		// from cm-c for its whole duration, 30 s.
		poll.Eventually(t, 15*time.Second, "cm-c to serve every cluster", s.are(shard.Assign(clusters, []string{"cm-c"})))
	})
}

// TestAHeldClusterMovesOnlyOnceReleased holds every cluster of a replica
// that serves them all, then starts a second: the clusters assigned to the
// second stop being served by the first at once, but the second starts
// serving them only after the first released its holds.
func TestAHeldClusterMovesOnlyOnceReleased(t *testing.T) {
	kube, namespace := setUp(t, "shard-hold")
	t.Parallel()
	s := newServers()
	defer s.check(t)

	a := startReplica(t, kube, namespace, "cm-a", s, nil)
	poll.Eventually(t, 30*time.Second, "cm-a to serve every cluster", s.are(shard.Assign(clusters, []string{"cm-a"})))
	var releases []func()
	for _, c := range clusters {
		release, ok := a.Acquire(c)
		if !ok {
			t.Fatalf("cm-a serves %s but cannot hold it", c)
		}
		releases = append(releases, release)
	}

	startReplica(t, kube, namespace, "cm-b", s, nil)
	two := shard.Assign(clusters, []string{"cm-a", "cm-b"})
	var moving []string
	for c, r := range two {
		if r == "cm-b" {
			moving = append(moving, c)
		}
	}
	slices.Sort(moving)
	// cm-b claims its clusters and looks at cm-a's claims at each renewal:
	// two renewals with its claims written means it has looked and waited.
	var renewals []time.Time
	poll.Eventually(t, 30*time.Second, "cm-a to drop and cm-b to claim "+fmt.Sprint(moving)+" twice", func(ctx context.Context) (bool, string) {
		for _, c := range moving {
			if a.Serves(c) {
				return false, "cm-a still serves " + c
			}
		}
		l := lease(t, kube, namespace, "cm-b")
		if claims := l.Annotations[shard.AnnotationClaims]; claims != encode(moving) {
			return false, "cm-b claims " + claims
		}
		if renewed := l.Spec.RenewTime.Time; len(renewals) == 0 || !renewed.Equal(renewals[len(renewals)-1]) {
			renewals = append(renewals, renewed)
		}
		return len(renewals) >= 2, fmt.Sprintf("cm-b renewed at %v", renewals)
	})
	if got := s.snapshotOf(moving); len(got) > 0 {
		t.Fatalf("cm-b serves %v while cm-a holds them", got)
	}
	l := lease(t, kube, namespace, "cm-a")
	if claims := l.Annotations[shard.AnnotationClaims]; claims != encode(clusters) {
		t.Errorf("cm-a's Lease claims %s while it holds every cluster, want %s", claims, encode(clusters))
	}

	releasedAt := time.Now()
	for _, release := range releases {
		release()
	}
	poll.Eventually(t, 30*time.Second, "cm-b to serve its clusters", s.are(two))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range moving {
		if s.gainedAt[c].Before(releasedAt) {
			t.Errorf("cm-b started serving %s at %s, before cm-a released it at %s", c, s.gainedAt[c].Format(time.StampMicro), releasedAt.Format(time.StampMicro))
		}
	}
}

// snapshotOf returns the clusters of cs that cm-b serves.
func (s *servers) snapshotOf(cs []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range cs {
		if s.server[c] == "cm-b" {
			out = append(out, c)
		}
	}
	return out
}

// encode is the claims annotation listing clusters (sorted).
func encode(clusters []string) string {
	sorted := slices.Sorted(slices.Values(clusters))
	out := "["
	for i, c := range sorted {
		if i > 0 {
			out += ","
		}
		out += `"` + c + `"`
	}
	return out + "]"
}
