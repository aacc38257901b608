package propagation

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// BenchmarkHungMember measures what one hung member costs the others. It
// writes 1,000 FederatedDeployments placed on three members at 100 writes
// per second, twice: first with every member healthy, then with the third
// member's kube-apiserver stopped by SIGSTOP once a tenth of them are
// written (a hung server: its port accepts connections, and nothing
// answers). Each time it measures the first write until the 2,000 copies
// of the two healthy members are present, and reports the ratio. It fails
// unless the hung member is reported Offline while hung, every copy
// arrives in the two healthy members while it is, and, once it is
// continued, it gets every copy and loses none: the controller-manager
// deletes nothing (its member delete and release counts stay 0).
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it writes 30 objects each
// time.
//
//	go test ./bench/propagation/ -run '^$' -bench BenchmarkHungMember -benchtime 1x -timeout 30m
func BenchmarkHungMember(b *testing.B) {
	n := fedtest.BenchN(b, 1000, 30)
	bd := startBed(b)
	ctx := context.Background()
	names := bd.clusterNames()
	healthy, hung := bd.members[:2], bd.fed.Members[2]
	for range b.N {
		all := bd.bulk(b, healthy, n, "all-%d", names, nil)
		b.Logf("all members healthy: %d × 3 copies in %s", n, all.Round(time.Millisecond))

		var frozenAt time.Time
		offline := make(chan offlineSeen, 1)
		freeze := func(i int) {
			if i == n/10 {
				if err := hung.Freeze(); err != nil {
					b.Error(err)
				}
				frozenAt = time.Now()
				go func() { offline <- bd.waitOffline(hung.Name) }()
			}
		}
		withHung := bd.bulk(b, healthy, n, "hung-%d", names, freeze)
		seen := <-offline
		if seen.err != nil {
			b.Fatal(seen.err)
		}
		b.Logf("%s hung after %d writes: the healthy members' %d copies in %s; reported Offline %s after it hung",
			hung.Name, n/10, 2*n, withHung.Round(time.Millisecond), seen.at.Sub(frozenAt).Round(time.Millisecond))
		if err := hung.Thaw(); err != nil {
			b.Fatal(err)
		}
		copies := bd.waitCopies(b, bd.members[2], 2*n)
		b.Logf("%s continued: it holds all %d copies", hung.Name, copies)
		for _, verb := range []string{`verb="delete"`, `verb="release"`} {
			if v, _, err := bd.cm.Sum(ctx, "fedwarden_member_writes_total", verb); err != nil || v != 0 {
				b.Fatalf("member writes with %s: %v (%v), want none: nothing is deleted", verb, v, err)
			}
		}
		b.ReportMetric(all.Seconds(), "all-healthy-s")
		b.ReportMetric(withHung.Seconds(), "one-hung-s")
		b.ReportMetric(withHung.Seconds()/all.Seconds(), "ratio")
		b.ReportMetric(seen.at.Sub(frozenAt).Seconds(), "offline-after-s")
	}
}

// bulk writes n FederatedDeployments named by format and placed on
// clusters at 100 per second, calling before(i), when set, before the
// i-th, and returns the time from the first write until members hold all
// their copies.
func (bd *bed) bulk(b *testing.B, members []kubernetes.Interface, n int, format string, clusters []string, before func(i int)) time.Duration {
	b.Helper()
	ctx := context.Background()
	a, stop := watchArrivals(b, members, n*len(members))
	defer stop()
	start := time.Now()
	if err := paced(ctx, n, func(i int) error {
		if before != nil {
			before(i)
		}
		return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, fmt.Sprintf(format, i), clusters...))
	}); err != nil {
		b.Fatal(err)
	}
	select {
	case <-a.All:
	case <-time.After(10 * time.Minute):
		b.Fatalf("the %d copies did not all arrive in the members within 10 minutes", n*len(members))
	}
	return time.Since(start)
}

// offlineSeen is when a cluster was seen Offline, or why it was not.
type offlineSeen struct {
	at  time.Time
	err error
}

// waitOffline waits, up to 2 minutes, until the FederatedCluster name is
// Offline, and says when it saw that.
func (bd *bed) waitOffline(name string) offlineSeen {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		fc := &corev1beta1.FederatedCluster{}
		if err := bd.host.Get(context.Background(), client.ObjectKey{Name: name}, fc); err != nil {
			return offlineSeen{err: err}
		}
		if meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterOffline) {
			return offlineSeen{at: time.Now()}
		}
		if time.Now().After(deadline) {
			return offlineSeen{err: fmt.Errorf("%s hung, not reported Offline within 2 minutes: %+v", name, fc.Status.Conditions)}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitCopies waits until member holds want Deployments in the namespace,
// and fails if it does not after 5 minutes.
func (bd *bed) waitCopies(b *testing.B, member kubernetes.Interface, want int) int {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		got, why := 0, ""
		list, err := member.AppsV1().Deployments(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			why = err.Error()
		} else if got = len(list.Items); got == want {
			return want
		}
		if time.Now().After(deadline) {
			b.Fatalf("the continued member holds %d copies after 5 minutes, want %d %s", got, want, why)
		}
		time.Sleep(time.Second)
	}
}
