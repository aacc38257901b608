package helm

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/internal/shard"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestReplicaLeasesWorkWithTheChartsRights runs two replicas' Memberships
// (internal/shard) as the chart's ServiceAccount, with only the chart's
// RBAC: they create and renew their Leases in the release namespace,
// watch each other's, split the clusters, and release their Leases when
// they stop; nothing they tried was forbidden.
func TestReplicaLeasesWorkWithTheChartsRights(t *testing.T) {
	needHelm(t)
	t.Parallel()
	admin, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	objs := mustRender(t)
	applyRights(t, admin, objs)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)
	cfg, err := fed.Host.ConfigForUser("system:serviceaccount:"+namespace+":"+sa.Name, "system:serviceaccounts", "system:serviceaccounts:"+namespace)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var logged []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, prefix+" "+args)
	}, funcr.Options{})
	clusters := []string{"member-1", "member-2", "member-3", "member-4"}
	identities := []string{"rights-0", "rights-1"}
	var replicas []*shard.Membership
	var stops []func()
	for _, id := range identities {
		opts := shard.DefaultOptions()
		opts.Namespace, opts.Identity = namespace, id
		opts.LeaseDuration, opts.RenewDeadline, opts.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
		m, err := shard.New(kube, opts)
		if err != nil {
			t.Fatal(err)
		}
		m.SetClusters(clusters)
		ctx, cancel := context.WithCancel(logr.NewContext(context.Background(), log.WithValues("replica", id)))
		done := make(chan error, 1)
		go func() { done <- m.Start(ctx) }()
		stop := sync.OnceFunc(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("replica %s: %v", id, err)
			}
		})
		t.Cleanup(stop)
		replicas, stops = append(replicas, m), append(stops, stop)
	}
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, line := range logged {
			if strings.Contains(strings.ToLower(line), "forbidden") {
				t.Errorf("a replica was refused something: %s", line)
			}
		}
		if t.Failed() {
			t.Logf("the replicas' log:\n%s", strings.Join(logged, "\n"))
		}
	}()

	want := shard.Assign(clusters, identities)
	poll.Eventually(t, 30*time.Second, "the two replicas to split the clusters", func(context.Context) (bool, string) {
		got := map[string]string{}
		for i, m := range replicas {
			for _, c := range m.Served() {
				got[c] = identities[i]
			}
		}
		return maps.Equal(got, want), fmt.Sprintf("%v, want %v", got, want)
	})
	for i, id := range identities {
		stops[i]()
		lease, err := kube.CoordinationV1().Leases(namespace).Get(t.Context(), shard.LeaseName(id), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if lease.Spec.HolderIdentity != nil {
			t.Errorf("replica %s stopped but its Lease is still held by %s", id, *lease.Spec.HolderIdentity)
		}
	}
}
