package bulk

import (
	"context"
	"fmt"
	"os"
	"slices"
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
	if limit := os.Getenv("FEDWARDEN_BENCH_GOMEMLIMIT"); limit != "" {
		// As the chart's controller-manager sets it from its container's
		// memory limit (--auto-gomemlimit-ratio); for this process alone,
		// not the API servers.
		settings.Env = []string{"GOMEMLIMIT=" + limit}
		logf("Fedwarden's controller-manager runs with GOMEMLIMIT=%s", limit)
	}
	cms := startReplicas(b, p, bin, bd, settings)
	defer func() {
		for _, cm := range cms {
			if err := cm.Stop(); err != nil {
				b.Error(err)
			}
		}
	}()
	cm := cms[0]
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
	if p.replicas > 1 {
		s.name = fmt.Sprintf("Fedwarden, %d replicas sharing the members", p.replicas)
		for _, r := range cms {
			s.replicas = append(s.replicas, r.PID())
		}
	}
	if !p.smoke {
		s.profileDir = profileDir(b)
		s.pprofURL = strings.TrimSuffix(pprofURL, "/heap")
	}
	s.afterBulk = func() {
		logQueueMetrics(b, "Fedwarden, the moment the bulk's last copy appeared", cm.MetricsURL)
		if !p.smoke {
			logHeap(b, "Fedwarden's controller-manager heap, the moment the bulk's last copy appeared", pprofURL, s.profileDir, "controller-heap.pprof")
		}
	}
	before, hostBefore := memberWrites(b, cms), hostWrites(b, bd)
	r := s.measure(b, p)
	logQueueMetrics(b, "Fedwarden, after the latency right after the bulk", cm.MetricsURL)
	copies := (1 + p.quiet + p.n + p.post) * p.members
	writes := settledMemberWrites(b, cms) - before
	objects := 1 + p.quiet + p.n + p.post
	perObject := (hostWrites(b, bd)-hostBefore)/float64(objects) - 1 // its creation
	logf("%s: %.2f host writes of Fedwarden's kinds per new object, beyond its creation", s.name, perObject)
	b.ReportMetric(perObject, "host-writes-per-object")
	logf("Fedwarden: %.0f member writes for %d copies (%.3f per copy)", writes, copies, writes/float64(copies))
	b.ReportMetric(writes/float64(copies), "member-writes-per-copy")
	if writes != float64(copies) {
		b.Fatalf("Fedwarden made %.0f member writes for %d copies, want exactly one each", writes, copies)
	}
	time.Sleep(5 * time.Second) // a window for writes that should not come
	if after := memberWrites(b, cms) - before; after != writes {
		b.Fatalf("Fedwarden made %.0f more member writes after every copy existed and its writes had settled", after-writes)
	}
	if !p.smoke {
		heap := settledHeap(b, pprofURL, s.profileDir, cm)
		logf("Fedwarden's controller-manager, settled: %.1f MiB of live heap after a garbage collection", heap)
		b.ReportMetric(heap, "fedwarden-settled-heap-MiB")
	}
	return base, r
}

// profileDir is where a run keeps its profiles: FEDWARDEN_BENCH_PROFILES
// if set, to read them after the run, or a directory removed with it.
func profileDir(b *testing.B) string {
	if dir := os.Getenv("FEDWARDEN_BENCH_PROFILES"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		return dir
	}
	return b.TempDir()
}

// startReplicas starts p.replicas controller-managers with settings, each
// with --share-clusters and a name of its own when there are several (the
// first alone keeps the pprof endpoint); the caller stops them.
func startReplicas(b *testing.B, p params, bin string, bd *bed, settings fedtest.Settings) []*fedtest.ControllerManager {
	var cms []*fedtest.ControllerManager
	for i := range p.replicas {
		s := settings
		if p.replicas > 1 {
			s.Args = append(slices.Clone(settings.Args), "--share-clusters", "--replica-name", fmt.Sprintf("replica-%d", i))
			if i > 0 {
				s.Args = withoutFlag(s.Args, "--pprof-bind-address")
			}
		}
		cm, err := fedtest.StartControllerManager(bin, bd.fed, bd.dir, s)
		if err != nil {
			for _, started := range cms {
				started.Kill()
			}
			b.Fatal(err)
		}
		cms = append(cms, cm)
	}
	return cms
}

// withoutFlag returns args without the flag name and its value.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name {
			i++ // its value
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// hostWrites is the host API server's count of writes to the kinds of
// types.kubefed.io so far: the federated resources, their status and their
// CPVs.
func hostWrites(b *testing.B, bd *bed) float64 {
	n, err := fedtest.HostWrites(context.Background(), bd.hostKube, "types.kubefed.io")
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// memberWrites is the controller-managers' apply writes to members so far.
func memberWrites(b *testing.B, cms []*fedtest.ControllerManager) float64 {
	var total float64
	for _, cm := range cms {
		n, _, err := cm.Sum(context.Background(), "fedwarden_member_writes_total", `verb="apply"`)
		if err != nil {
			b.Fatal(err)
		}
		total += n
	}
	return total
}

// settledMemberWrites waits until the member writes have not moved for
// three seconds (a member's watch can show an object before the controller
// counted its write) and returns them.
func settledMemberWrites(b *testing.B, cms []*fedtest.ControllerManager) float64 {
	last, still := memberWrites(b, cms), 0
	for still < 3 {
		time.Sleep(time.Second)
		now := memberWrites(b, cms)
		if now == last {
			still++
			continue
		}
		last, still = now, 0
	}
	return last
}
