package bulk

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// runFedwarden measures the direct baselines on a bed with Fedwarden's
// CRDs, then runs Fedwarden's controller-manager (bin, its default flags)
// and measures it. The bed is stopped before it returns.
func runFedwarden(b *testing.B, p params, bd *bed, bin string) (baseline, result) {
	ctx := context.Background()
	defer bd.stop(b)
	logf("Fedwarden's bed is up: a host and %d members", p.members)
	base := measureBaseline(b, p, bd)
	logf("minimum work %.1f s, direct clients only %.1f s", base.minimumWork.Seconds(), base.directOnly.Seconds())

	pprofPort, err := fedtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	pprofURL := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", pprofPort)
	settings := fedtest.SteadySettings
	settings.Args = append([]string{"--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", pprofPort)}, strings.Fields(os.Getenv("FEDWARDEN_BENCH_ARGS"))...)
	cm, err := fedtest.StartControllerManager(bin, bd.fed, bd.dir, settings)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := cm.Stop(); err != nil {
			b.Error(err)
		}
	}()
	for _, m := range bd.fed.Members {
		r, err := fedtest.Run(ctx, bin, fedtest.JoinArgs(bd.fed, m, m.Name)...)
		if err != nil || r.Code != 0 {
			b.Fatalf("join %s: %v %s", m.Name, err, r)
		}
	}
	if err := corev1beta1.AddToScheme(bd.host.Scheme()); err != nil {
		b.Fatal(err)
	}
	fedtest.EnableDeployments(b, bd.host)

	logf("Fedwarden runs, the members joined, Deployments enabled")
	s := &system{name: "Fedwarden", bd: bd, pid: cm.PID()}
	if !p.smoke {
		s.profileDir = b.TempDir()
	}
	s.afterBulk = func() {
		logQueueMetrics(b, "Fedwarden, the moment the bulk's last copy appeared", cm.MetricsURL)
		if !p.smoke {
			logHeap(b, "Fedwarden's controller-manager heap, the moment the bulk's last copy appeared", pprofURL, s.profileDir)
		}
	}
	before := memberWrites(b, cm)
	r := s.measure(b, p)
	logQueueMetrics(b, "Fedwarden, after the latency right after the bulk", cm.MetricsURL)
	copies := (1 + p.quiet + p.n + p.post) * p.members
	writes := settledMemberWrites(b, cm) - before
	logf("Fedwarden: %.0f member writes for %d copies (%.3f per copy)", writes, copies, writes/float64(copies))
	b.ReportMetric(writes/float64(copies), "member-writes-per-copy")
	if writes != float64(copies) {
		b.Fatalf("Fedwarden made %.0f member writes for %d copies, want exactly one each", writes, copies)
	}
	time.Sleep(5 * time.Second) // a window for writes that should not come
	if after := memberWrites(b, cm) - before; after != writes {
		b.Fatalf("Fedwarden made %.0f more member writes after every copy existed and its writes had settled", after-writes)
	}
	if !p.smoke {
		heap := settledHeap(b, pprofURL, cm)
		logf("Fedwarden's controller-manager, settled: %.1f MiB of live heap after a garbage collection", heap)
		b.ReportMetric(heap, "fedwarden-settled-heap-MiB")
	}
	return base, r
}

// memberWrites is the controller-manager's apply writes to members so far.
func memberWrites(b *testing.B, cm *fedtest.ControllerManager) float64 {
	total, _, err := cm.Sum(context.Background(), "fedwarden_member_writes_total", `verb="apply"`)
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// settledMemberWrites waits until the member writes have not moved for
// three seconds (a member's watch can show an object before the controller
// counted its write) and returns them.
func settledMemberWrites(b *testing.B, cm *fedtest.ControllerManager) float64 {
	last, still := memberWrites(b, cm), 0
	for still < 3 {
		time.Sleep(time.Second)
		now := memberWrites(b, cm)
		if now == last {
			still++
			continue
		}
		last, still = now, 0
	}
	return last
}
