// Package propagation measures how fast Fedwarden propagates federated
// resources to member clusters, beside a direct client writing the same
// objects to the members. Results and the command that reproduces them are
// in bench/RESULTS.md.
package propagation

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const namespace = "bench"

// bed is a host with three joined members and a controller-manager.
type bed struct {
	fed     *localfed.Federation
	fb      *fedtest.Bed
	cm      *fedtest.ControllerManager
	host    client.Client
	members []kubernetes.Interface
}

func startBed(b *testing.B) *bed {
	b.Helper()
	ctrllog.SetLogger(logr.Discard()) // before the bed makes its clients
	s := fedtest.SteadySettings
	fb := fedtest.StartBed(b, fedtest.Options{ControllerManager: &s, Join: true, Unthrottled: true, Federation: []localfed.Option{localfed.WithMembers(3)}})
	bd := &bed{fed: fb.Fed, fb: fb, cm: fb.CM, host: fb.Host}
	for _, m := range fb.Fed.Members {
		bd.members = append(bd.members, fedtest.MustKube(b, m.Config))
	}
	ctx := context.Background()
	for _, c := range append([]kubernetes.Interface{fedtest.MustKube(b, fb.Fed.Host.Config)}, bd.members...) {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	fedtest.EnableDeployments(b, bd.host)
	return bd
}

// clusterNames are the names of the bed's members.
func (bd *bed) clusterNames() []string {
	names := make([]string, 0, len(bd.fed.Members))
	for _, m := range bd.fed.Members {
		names = append(names, m.Name)
	}
	return names
}

// startControllerManager starts a controller-manager again; the bed stops
// it when the benchmark ends.
func (bd *bed) startControllerManager(b *testing.B) {
	b.Helper()
	bd.cm = bd.fb.StartControllerManager(b, fedtest.SteadySettings)
}

// watchArrivals watches the Deployments created in members from now on.
func watchArrivals(b *testing.B, members []kubernetes.Interface, want int) (*fedtest.Arrivals, func()) {
	a, stop, err := fedtest.WatchArrivals(context.Background(), namespace, members, want)
	if err != nil {
		b.Fatal(err)
	}
	return a, stop
}

// BenchmarkCreateLatency creates 200 objects one at a time and measures the
// time from the create call until the object is present: for Fedwarden, a
// FederatedDeployment until its Deployment is in all three members; for the
// baseline, a Deployment created directly in one member until that member's
// watch shows it. It fails unless every object arrived in every member and
// the controller-manager wrote each member copy once.
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it creates 10 objects of each.
//
//	go test ./bench/propagation/ -run '^$' -bench BenchmarkCreateLatency -benchtime 1x -timeout 30m
func BenchmarkCreateLatency(b *testing.B) {
	n := fedtest.BenchN(b, 200, 10)
	bd := startBed(b)
	ctx := context.Background()
	names := bd.clusterNames()
	for range b.N {
		writesBefore := bd.memberWrites(b)
		direct := make([]time.Duration, 0, n)
		a, stop := watchArrivals(b, bd.members[:1], -1)
		for i := range n {
			name := fmt.Sprintf("direct-%d", i)
			arrived := a.Expect(name)
			start := time.Now()
			if _, err := bd.members[0].AppsV1().Deployments(namespace).Create(ctx, fedtest.BenchDeployment(namespace, name), metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				b.Fatalf("%s did not reach its member within a minute", name)
			}
			direct = append(direct, time.Since(start))
		}
		stop()
		federated := make([]time.Duration, 0, n)
		a, stop = watchArrivals(b, bd.members, -1)
		for i := range n {
			name := fmt.Sprintf("fed-%d", i)
			arrived := a.Expect(name)
			start := time.Now()
			if err := bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, name, names...)); err != nil {
				b.Fatal(err)
			}
			select {
			case <-arrived:
			case <-time.After(time.Minute):
				b.Fatalf("%s did not reach all members within a minute", name)
			}
			federated = append(federated, time.Since(start))
		}
		stop()
		checkWritesPerCopy(b, bd.memberWrites(b)-writesBefore, n*len(bd.members))
		b.ReportMetric(float64(fedtest.Percentile(direct, .5).Microseconds())/1000, "direct-p50-ms")
		b.ReportMetric(float64(fedtest.Percentile(direct, .99).Microseconds())/1000, "direct-p99-ms")
		b.ReportMetric(float64(fedtest.Percentile(federated, .5).Microseconds())/1000, "fedwarden-p50-ms")
		b.ReportMetric(float64(fedtest.Percentile(federated, .99).Microseconds())/1000, "fedwarden-p99-ms")
	}
}

// BenchmarkColdSync writes 1,000 objects at 100 writes per second and
// measures the time from the first write until all 3,000 member objects are
// present: for the baseline, three direct clients (one per member) each
// writing its 1,000 Deployments at 100 QPS; for Fedwarden, one client
// writing 1,000 FederatedDeployments placed on the three members at 100
// QPS. It also reports the controller-manager's peak RSS, its member writes
// during the sync, and its member writes after a restart with nothing
// changed. It fails unless every member object arrived, the sync made one
// member write per member object and the restarted controller-manager made
// none (bench/RESULTS.md).
//
// With FEDWARDEN_BENCH_SMOKE=1 (fedtest.Smoke) it writes 30 objects.
//
//	go test ./bench/propagation/ -run '^$' -bench BenchmarkColdSync -benchtime 1x -timeout 30m
func BenchmarkColdSync(b *testing.B) {
	n := fedtest.BenchN(b, 1000, 30)
	bd := startBed(b)
	ctx := context.Background()
	names := bd.clusterNames()
	for range b.N {
		a, stop := watchArrivals(b, bd.members, n*len(bd.members))
		start := time.Now()
		var wg sync.WaitGroup
		for _, m := range bd.members {
			wg.Go(func() {
				paced(ctx, n, func(i int) error {
					_, err := m.AppsV1().Deployments(namespace).Create(ctx, fedtest.BenchDeployment(namespace, fmt.Sprintf("direct-%d", i)), metav1.CreateOptions{})
					return err
				})
			})
		}
		wg.Wait()
		<-a.All
		direct := time.Since(start)
		stop()

		a, stop = watchArrivals(b, bd.members, n*len(bd.members))
		start = time.Now()
		if err := paced(ctx, n, func(i int) error {
			return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, fmt.Sprintf("fed-%d", i), names...))
		}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-a.All:
		case <-time.After(10 * time.Minute):
			b.Fatalf("the %d member objects did not all arrive within 10 minutes", n*len(bd.members))
		}
		federated := time.Since(start)
		stop()
		_, peak, err := fedtest.ProcessMemory(bd.cm.PID())
		if err != nil {
			b.Fatal(err)
		}
		writes := bd.memberWrites(b)
		checkWritesPerCopy(b, writes, n*len(bd.members))
		afterRestart := bd.writesAfterRestart(b, n)
		if afterRestart != 0 {
			b.Fatalf("the restarted controller-manager made %v member writes with nothing changed, want 0 (log: %s)", afterRestart, bd.cm.LogPath)
		}
		b.ReportMetric(direct.Seconds(), "direct-s")
		b.ReportMetric(federated.Seconds(), "fedwarden-s")
		b.ReportMetric(federated.Seconds()/direct.Seconds(), "ratio")
		b.ReportMetric(float64(peak)/1024, "controller-peak-rss-MiB")
		b.ReportMetric(writes/float64(n*len(bd.members)), "member-writes-per-object")
		b.ReportMetric(afterRestart, "member-writes-after-restart")
	}
}

// paced calls write(i) for i in [0, n) at 100 calls per second, from up to
// 16 goroutines.
func paced(ctx context.Context, n int, write func(i int) error) error {
	limiter := rate.NewLimiter(100, 1)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	sem := make(chan struct{}, 16)
	for i := range n {
		if err := limiter.Wait(ctx); err != nil {
			return err
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := write(i); err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return firstErr
}

// checkWritesPerCopy fails b unless the controller-manager made exactly one
// member write per copy it created (bench/RESULTS.md: 1.000 per object).
func checkWritesPerCopy(b *testing.B, writes float64, copies int) {
	b.Helper()
	if writes != float64(copies) {
		b.Fatalf("the controller-manager made %v member writes for %d new copies, want one each", writes, copies)
	}
}

// memberWrites sums the controller-manager's apply writes to the members,
// once the sum has stopped moving: a member's watch may show an object
// before the controller has counted the write that made it.
func (bd *bed) memberWrites(b *testing.B) float64 {
	return bd.cm.SettledSum(b, "fedwarden_member_writes_total", `verb="apply"`)
}

// writesAfterRestart restarts the controller-manager, waits until it has
// synced every one of the n federated resources, and returns how many
// member writes it made.
func (bd *bed) writesAfterRestart(b *testing.B, n int) float64 {
	if err := bd.cm.Stop(); err != nil {
		b.Fatal(err)
	}
	bd.startControllerManager(b)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		// A sync that succeeds asks to be looked at again after the resync
		// period: controller-runtime counts it as requeue_after.
		done, _, err := bd.cm.Metric(context.Background(), `controller_runtime_reconcile_total{controller="propagation-deployments.apps",result="success"}`)
		later, _, err2 := bd.cm.Metric(context.Background(), `controller_runtime_reconcile_total{controller="propagation-deployments.apps",result="requeue_after"}`)
		v := done + later
		if err == nil && err2 == nil && v >= float64(n) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "the restarted controller-manager synced %v of %d resources in 5 minutes\n", v, n)
			b.Fatal("restart did not converge")
		}
		time.Sleep(500 * time.Millisecond)
	}
	return bd.memberWrites(b)
}
