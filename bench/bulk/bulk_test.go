// Package bulk measures a bulk of N FederatedDeployments placed on M member
// clusters (issue 18 §3): against the minimum work any federation causes
// and direct clients, for Fedwarden and for KubeFed v0.10.0, with the
// create latency of single objects when quiet and right after the bulk, the
// controllers' memory, the host API server's CPU profile and the
// controller's queue metrics. Results and the commands that reproduce them
// are in bench/bulk/RESULTS.md.
package bulk

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const (
	// namespace holds the federated objects and their copies.
	namespace = "bench"
	// baselineNamespace holds what the direct clients write.
	baselineNamespace = "baseline"
	// qps is the pace of every load client.
	qps = 100
)

// params are a run's sizes, from the environment.
type params struct {
	n, members  int
	replicas    int // controller-manager replicas; more than 1 share the members (--share-clusters)
	kubefed     bool
	lean        bool // members from localfed.WithLeanMembers
	smoke       bool
	quiet, post int // create-latency samples: quiet, and right after the bulk
	binDir      string
}

// paramsFromEnv reads the sizes, the number of members from membersEnv
// (default members).
func paramsFromEnv(b *testing.B, membersEnv string, members int) params {
	b.Helper()
	p := params{
		n:        envInt(b, "FEDWARDEN_BENCH_N", 1000),
		members:  envInt(b, membersEnv, members),
		replicas: 1,
		kubefed:  envInt(b, "FEDWARDEN_BENCH_KUBEFED", 1) != 0,
		smoke:    fedtest.Smoke(),
		quiet:    200,
		post:     50,
		binDir:   os.Getenv("FEDWARDEN_BIN_DIR"),
	}
	p.n = fedtest.BenchN(b, p.n, 20)
	if p.smoke {
		p.quiet, p.post = 5, 5
	}
	if p.binDir == "" {
		p.binDir = "../../bin"
	}
	dir, err := filepath.Abs(p.binDir)
	if err != nil {
		b.Fatal(err)
	}
	p.binDir = dir
	return p
}

// logf prints a line of the run's record, with the time since the run
// started: b.Log would cut the tables short in a benchmark's output.
func logf(format string, args ...any) {
	fmt.Printf("%7.1fs  %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

var began = time.Now()

func init() { ctrllog.SetLogger(logr.Discard()) }

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		b.Fatalf("%s=%q: want a number", name, v)
	}
	return n
}

// BenchmarkBulk runs, on fresh beds of a host and FEDWARDEN_BENCH_MEMBERS
// members (default 3), a bulk of FEDWARDEN_BENCH_N (default 1,000)
// FederatedDeployments placed on every member, created by one load client
// at 100 QPS: first the minimum work (the N host objects and the N×M member
// Deployments written at once by direct clients, each at 100 QPS) and the
// direct clients alone, then Fedwarden, then, unless FEDWARDEN_BENCH_KUBEFED
// is 0, KubeFed v0.10.0 on a bed of its own. For each system: the time from
// the first host write until the members' watches have seen every copy, the
// controller's and the host API server's memory, the memory of every
// process the benchmark started, and the create latency of single objects
// when quiet and right after the bulk. For Fedwarden also the member writes
// per copy, a CPU profile of the host API server over the bulk and the
// controller's queue metrics right after it. FEDWARDEN_BENCH_ARGS are more
// flags of Fedwarden's controller-manager, FEDWARDEN_BENCH_GOMEMLIMIT its
// GOMEMLIMIT (a container's memory limit, as the chart passes it on), and
// FEDWARDEN_BENCH_PROFILES a directory that keeps the profiles.
//
//	go test ./bench/bulk/ -run '^$' -bench BenchmarkBulk -benchtime 1x -timeout 60m
func BenchmarkBulk(b *testing.B) {
	if testing.Short() {
		b.Skip("needs real API servers")
	}
	p := paramsFromEnv(b, "FEDWARDEN_BENCH_MEMBERS", 3)
	if p.kubefed {
		if _, err := os.Stat(filepath.Join(p.binDir, "kubefed-controller-manager")); err != nil {
			b.Skipf("KubeFed is not built (%v): run hack/tools/build.sh kubefed-controller-manager kubefedctl kubefed-crds, or set FEDWARDEN_BENCH_KUBEFED=0", err)
		}
	}
	for range b.N {
		runBulk(b, p)
	}
}

// BenchmarkManyMembers is BenchmarkBulk for Fedwarden alone, on a bed
// of FEDWARDEN_BENCH_MANY_MEMBERS (default 20, 5 in a smoke run) lean members
// (localfed.WithLeanMembers), which share the host's etcd: whether a bed of
// many members runs on one machine, and how the bulk fares there. Its
// figures are in bench/bulk/RESULTS.md, "Many members on one machine".
//
//	go test ./bench/bulk/ -run '^$' -bench BenchmarkManyMembers -benchtime 1x -timeout 90m
func BenchmarkManyMembers(b *testing.B) {
	if testing.Short() {
		b.Skip("needs real API servers")
	}
	members := 20
	if fedtest.Smoke() {
		// 20 members take about 3 minutes to start, join and check at
		// smoke size on 2 busy cores; 5 go through the same code.
		members = 5
	}
	p := paramsFromEnv(b, "FEDWARDEN_BENCH_MANY_MEMBERS", members)
	p.kubefed, p.lean = false, true
	for range b.N {
		runBulk(b, p)
	}
}

// BenchmarkSharedReplicas is BenchmarkManyMembers with
// FEDWARDEN_BENCH_REPLICAS (default 3) controller-manager replicas that
// share FEDWARDEN_BENCH_SHARED_MEMBERS (default 6) lean members
// (--share-clusters): the bulk's time against the same run's minimum work,
// each replica's memory, and that the replicas together write each copy
// exactly once. Its figures are in bench/bulk/RESULTS.md, "Replicas that
// share the members"; BenchmarkManyMembers with
// FEDWARDEN_BENCH_MANY_MEMBERS=6 is the one-replica run to compare with.
//
//	go test ./bench/bulk/ -run '^$' -bench BenchmarkSharedReplicas -benchtime 1x -timeout 60m
func BenchmarkSharedReplicas(b *testing.B) {
	if testing.Short() {
		b.Skip("needs real API servers")
	}
	p := paramsFromEnv(b, "FEDWARDEN_BENCH_SHARED_MEMBERS", 6)
	p.kubefed, p.lean = false, true
	p.replicas = envInt(b, "FEDWARDEN_BENCH_REPLICAS", 3)
	for range b.N {
		runBulk(b, p)
	}
}

// runBulk runs one bulk as p says: Fedwarden, then KubeFed if p.kubefed.
func runBulk(b *testing.B, p params) {
	// Fedwarden's binary builds while the bed starts. In a smoke test,
	// KubeFed's bed starts beside Fedwarden's too, to stay within two
	// minutes; in a measurement it starts once Fedwarden's is gone.
	built := make(chan buildResult, 1)
	go func() {
		var r buildResult
		r.dir, r.err = os.MkdirTemp("", "bulk-fedwarden-")
		if r.err == nil {
			r.bin, r.err = fedtest.Build(r.dir)
		}
		built <- r
	}()
	kubefedBed, used := make(chan bedResult, 1), false
	if p.kubefed && p.smoke {
		go func() { kubefedBed <- newBed(p, localfed.WithoutCRDs()) }()
		b.Cleanup(func() {
			if used {
				return
			}
			// Fedwarden's part failed before KubeFed's bed was used.
			if r := <-kubefedBed; r.bd != nil {
				_ = r.bd.fed.Stop()
			}
		})
	}
	fwBed := mustBed(b, newBed(p))
	fwBin := <-built
	if fwBin.dir != "" {
		b.Cleanup(func() { _ = os.RemoveAll(fwBin.dir) })
	}
	if fwBin.err != nil {
		b.Fatal(fwBin.err)
	}
	base, fw := runFedwarden(b, p, fwBed, fwBin.bin)
	results := []result{fw}
	if p.kubefed {
		if !p.smoke {
			kubefedBed <- newBed(p, localfed.WithoutCRDs())
		}
		used = true
		results = append(results, runKubeFed(b, p, mustBed(b, <-kubefedBed)))
	}
	report(b, p, base, results)
}

type buildResult struct {
	dir, bin string
	err      error
}

// baseline is what direct clients take for the same objects.
type baseline struct {
	minimumWork time.Duration // N host objects and N×M member objects at once
	directOnly  time.Duration // the N×M member objects only
	// minimumCPU is what the processes used over the minimum work.
	minimumCPU cpuUse
}

// result is one system's figures.
type result struct {
	system   string
	converge time.Duration // first host write → every copy seen
	load     time.Duration // the load client's N host creates
	// KiB, at the moment the last copy appeared; of the replica with the
	// highest peak when several share the members.
	rss, peak, hostRSS, hostPeak int64
	// replicaPeaks are each replica's peak RSS (KiB) when several share
	// the members.
	replicaPeaks []int64
	// procs: every process the benchmark started, at the same moment (in
	// a smoke run with KubeFed, KubeFed's bed too).
	procs processMemory
	// cpu is what the processes used from the bulk's first create until
	// its last copy appeared.
	cpu         cpuUse
	quiet, post []time.Duration
}

// bed is a host and its members, with clients of each.
type bed struct {
	fed      *localfed.Federation
	dir      string
	host     client.Client
	hostKube kubernetes.Interface
	members  []kubernetes.Interface
	clusters []string // the members' names
}

// memberControllers are the bed's default kube-controller-manager
// controllers without the workload ones: no ReplicaSets or Pods are made
// for the copies, so that at 10,000 × 3 the machine measures the
// federation, not the Deployment controller.
func memberControllers() []string {
	return slices.DeleteFunc(slices.Clone(localfed.DefaultControllers), func(c string) bool {
		return c == "deployment-controller" || c == "replicaset-controller"
	})
}

type bedResult struct {
	bd  *bed
	err error
}

// newBed starts a bed of a host and p.members members, with a namespace for
// the federated objects and one for the direct clients in each.
func newBed(p params, opts ...localfed.Option) bedResult {
	opts = append([]localfed.Option{localfed.WithMembers(p.members), localfed.WithBinDir(p.binDir), localfed.WithControllers(memberControllers()...),
		localfed.WithStartTimeout(startTimeout(p))}, opts...)
	if p.lean {
		opts = append(opts, localfed.WithLeanMembers())
	}
	f, err := localfed.Start(context.Background(), opts...)
	if err != nil {
		return bedResult{err: err}
	}
	bd, err := clientsOf(f)
	if err != nil {
		return bedResult{bd: &bed{fed: f}, err: err}
	}
	ctx := context.Background()
	for _, c := range append([]kubernetes.Interface{bd.hostKube}, bd.members...) {
		for _, ns := range []string{namespace, baselineNamespace} {
			if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				return bedResult{bd: bd, err: err}
			}
		}
	}
	return bedResult{bd: bd}
}

func clientsOf(f *localfed.Federation) (*bed, error) {
	bd := &bed{fed: f}
	var err error
	if bd.hostKube, err = kubernetes.NewForConfig(fedtest.Unthrottled(f.Host.Config)); err != nil {
		return bd, err
	}
	if bd.host, err = client.New(fedtest.Unthrottled(f.Host.Config), client.Options{}); err != nil {
		return bd, err
	}
	for _, m := range f.Members {
		kc, err := kubernetes.NewForConfig(fedtest.Unthrottled(m.Config))
		if err != nil {
			return bd, err
		}
		bd.members = append(bd.members, kc)
		bd.clusters = append(bd.clusters, m.Name)
	}
	return bd, nil
}

// mustBed fails b if the bed did not start, and stops the bed when b ends.
func mustBed(b *testing.B, r bedResult) *bed {
	b.Helper()
	if r.bd != nil {
		b.Cleanup(func() { _ = r.bd.fed.Stop() })
	}
	if r.err != nil {
		b.Fatal(r.err)
	}
	r.bd.dir = b.TempDir()
	return r.bd
}

// stop stops the bed now, to free the machine for the next one.
func (bd *bed) stop(b *testing.B) {
	if err := bd.fed.Stop(); err != nil {
		logf("stopping the bed: %v", err)
	}
}

// startTimeout bounds the start of each process of a bed: localfed's
// default minute, and 5 s more per member beyond 10, since they all start
// at once on a machine of few cores.
func startTimeout(p params) time.Duration {
	return time.Minute + time.Duration(max(0, p.members-10))*5*time.Second
}

// bulkDeadline bounds the wait for a bulk's copies.
func bulkDeadline(p params) time.Duration {
	return 5*time.Minute + time.Duration(p.n*p.members)*40*time.Millisecond
}

// measureBaseline writes, with no federation running, the minimum work —
// the N FederatedDeployments on the host and the N×M Deployments in the
// members, each client at 100 QPS, all at once — and then the N×M member
// Deployments alone, each timed from the first write until every object
// was written and seen by the members' watches. It removes them after.
func measureBaseline(b *testing.B, p params, bd *bed) baseline {
	ctx := context.Background()
	hostPID, err := fedtest.APIServerPID(bd.fed.Host)
	if err != nil {
		b.Fatal(err)
	}
	var minimumCPU cpuUse
	write := func(prefix string, withHost bool) time.Duration {
		a, stop, err := fedtest.WatchArrivals(ctx, baselineNamespace, bd.members, p.n*p.members)
		if err != nil {
			b.Fatal(err)
		}
		defer stop()
		var (
			wg   sync.WaitGroup
			errs = make([]error, len(bd.members)+1)
		)
		cpuBefore, err := readCPU(hostPID)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		for i, m := range bd.members {
			wg.Go(func() {
				errs[i] = fedtest.Paced(ctx, qps, p.n, func(j int) error {
					_, err := m.AppsV1().Deployments(baselineNamespace).Create(ctx, fedtest.BenchDeployment(baselineNamespace, fmt.Sprintf("%s-%d", prefix, j)), metav1.CreateOptions{})
					return err
				})
			})
		}
		if withHost {
			wg.Go(func() {
				errs[len(bd.members)] = fedtest.Paced(ctx, qps, p.n, func(j int) error {
					return bd.host.Create(ctx, fedtest.BenchFederatedDeployment(baselineNamespace, fmt.Sprintf("%s-%d", prefix, j), bd.clusters...))
				})
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		select {
		case <-a.All:
		case <-time.After(bulkDeadline(p)):
			b.Fatalf("the direct clients' %d member objects were not all seen within %s", p.n*p.members, bulkDeadline(p))
		}
		took := time.Since(start)
		if withHost {
			cpuAfter, err := readCPU(hostPID)
			if err != nil {
				b.Fatal(err)
			}
			minimumCPU = cpuAfter.since(cpuBefore)
		}
		return took
	}
	base := baseline{minimumWork: write("min", true), directOnly: write("direct", false), minimumCPU: minimumCPU}
	for _, m := range bd.members {
		if err := m.AppsV1().Deployments(baselineNamespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	fd := fedtest.BenchFederatedDeployment(baselineNamespace, "any")
	if err := bd.host.DeleteAllOf(ctx, fd, client.InNamespace(baselineNamespace)); err != nil {
		b.Fatal(err)
	}
	return base
}

// system is a federation running on a bed, as the measurements see it.
type system struct {
	name string
	bd   *bed
	pid  int // the controller's process
	// replicas are the processes of the replicas sharing the members,
	// when there are several; pid is then ignored.
	replicas []int
	// afterBulk, if set, runs (in its own goroutine) the moment the last
	// copy of the bulk appeared.
	afterBulk func()
	// profileDir, if set, receives CPU profiles of the host API server
	// taken over the bulk, and of the controller if pprofURL is set (its
	// /debug/pprof).
	profileDir, pprofURL string
}

// warmUp creates one FederatedDeployment and waits until every member has
// it: the federation works.
func (s *system) warmUp(b *testing.B) {
	lat := s.latency(b, "warmup", 1)
	logf("%s: the first FederatedDeployment reached the %d members in %s", s.name, len(s.bd.members), lat[0].Round(time.Millisecond))
}

// latency creates n FederatedDeployments one at a time and returns, for
// each, the time from its create call until the watches of every member
// have seen its copy.
func (s *system) latency(b *testing.B, prefix string, n int) []time.Duration {
	a, stop, err := fedtest.WatchArrivals(context.Background(), namespace, s.bd.members, -1)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	return s.latencyWith(b, a, prefix, n)
}

func (s *system) latencyWith(b *testing.B, a *fedtest.Arrivals, prefix string, n int) []time.Duration {
	ctx := context.Background()
	out := make([]time.Duration, 0, n)
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		arrived := a.Expect(name)
		start := time.Now()
		if err := s.bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, name, s.bd.clusters...)); err != nil {
			b.Fatal(err)
		}
		select {
		case <-arrived:
		case <-time.After(time.Minute):
			b.Fatalf("%s: %s did not reach every member within a minute", s.name, name)
		}
		out = append(out, time.Since(start))
	}
	return out
}

// measure runs the quiet create latency, the bulk and the create latency
// right after it, and checks that every member holds every copy.
func (s *system) measure(b *testing.B, p params) result {
	ctx := context.Background()
	r := result{system: s.name}
	s.warmUp(b)
	r.quiet = s.latency(b, "quiet", p.quiet)

	// The watches of the latency right after the bulk start now, so that
	// setting them up does not delay it.
	post, stopPost, err := fedtest.WatchArrivals(ctx, namespace, s.bd.members, -1)
	if err != nil {
		b.Fatal(err)
	}
	defer stopPost()
	all, stopAll, err := fedtest.WatchArrivals(ctx, namespace, s.bd.members, p.n*p.members)
	if err != nil {
		b.Fatal(err)
	}
	defer stopAll()
	var profiles []*cpuProfiles
	if s.profileDir != "" {
		profiles = append(profiles, profileHost(s.bd.hostKube, s.profileDir))
		if s.pprofURL != "" {
			profiles = append(profiles, profileController(s.pprofURL, s.profileDir))
		}
	}
	hostPID, err := fedtest.APIServerPID(s.bd.fed.Host)
	if err != nil {
		b.Fatal(err)
	}
	cpuBefore, err := readCPU(hostPID, append([]int{s.pid}, s.replicas...)...)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	loadErr := make(chan error, 1)
	go func() {
		loadErr <- fedtest.Paced(ctx, qps, p.n, func(i int) error {
			return s.bd.host.Create(ctx, fedtest.BenchFederatedDeployment(namespace, fmt.Sprintf("bulk-%d", i), s.bd.clusters...))
		})
		r.load = time.Since(start)
	}()
	select {
	case <-all.All:
	case <-time.After(bulkDeadline(p)):
		b.Fatalf("%s: the %d copies were not all seen within %s", s.name, p.n*p.members, bulkDeadline(p))
	}
	r.converge = time.Since(start)
	cpuAfter, err := readCPU(hostPID, append([]int{s.pid}, s.replicas...)...)
	if err != nil {
		b.Fatal(err)
	}
	r.cpu = cpuAfter.since(cpuBefore)
	if err := <-loadErr; err != nil { // the copies cannot all be there before the creates returned
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	if s.afterBulk != nil {
		wg.Go(s.afterBulk)
	}
	for _, cp := range profiles {
		cp.stop()
	}
	r.rss, r.peak = memory(b, s.pid)
	for _, pid := range s.replicas {
		rss, peak := memory(b, pid)
		r.replicaPeaks = append(r.replicaPeaks, peak)
		if peak >= slices.Max(r.replicaPeaks) {
			r.rss, r.peak = rss, peak
		}
	}
	r.hostRSS, r.hostPeak = memory(b, hostPID)
	if r.procs, err = descendantsMemory(); err != nil {
		b.Fatal(err)
	}
	r.post = s.latencyWith(b, post, "post", p.post)
	wg.Wait()
	for _, cp := range profiles {
		cp.report(b)
	}
	s.checkCopies(b, 1+p.quiet+p.n+p.post)
	return r
}

func memory(b *testing.B, pid int) (rss, peak int64) {
	rss, peak, err := fedtest.ProcessMemory(pid)
	if err != nil {
		b.Fatal(err)
	}
	return rss, peak
}

// checkCopies fails unless every member holds want Deployments in the
// namespace.
func (s *system) checkCopies(b *testing.B, want int) {
	for i, m := range s.bd.members {
		list, err := m.AppsV1().Deployments(namespace).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(list.Items) != want {
			b.Fatalf("%s: member %s holds %d Deployments, want %d", s.name, s.bd.clusters[i], len(list.Items), want)
		}
	}
}

// report logs the figures as tables and reports them as metrics.
func report(b *testing.B, p params, base baseline, results []result) {
	mib := func(kib int64) string { return fmt.Sprintf("%.0f MiB", float64(kib)/1024) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
	var rows []string
	rows = append(rows,
		fmt.Sprintf("| minimum work (direct clients: %d host + %d member objects) | %.1f s | — | 1.00× | — | — | — |", p.n, p.n*p.members, base.minimumWork.Seconds()),
		fmt.Sprintf("| direct clients, the %d member objects only | %.1f s | — | %.2f× | — | — | — |", p.n*p.members, base.directOnly.Seconds(), base.directOnly.Seconds()/base.minimumWork.Seconds()))
	b.ReportMetric(base.minimumWork.Seconds(), "minimum-work-s")
	b.ReportMetric(base.directOnly.Seconds(), "direct-s")
	logf("CPU over the minimum work: %s", base.minimumCPU.String(base.minimumWork.Seconds()))
	var lat []string
	for _, r := range results {
		rows = append(rows, fmt.Sprintf("| %s | %.1f s | %.1f s | %.2f× | %s / %s | %s | %s |", r.system, r.converge.Seconds(), r.load.Seconds(),
			r.converge.Seconds()/base.minimumWork.Seconds(), mib(r.peak), mib(r.rss), mib(r.hostRSS), mib(r.hostPeak)))
		lat = append(lat, fmt.Sprintf("| %s | %s | %s | %s | %s |", r.system,
			ms(fedtest.Percentile(r.quiet, .5)), ms(fedtest.Percentile(r.quiet, .99)), ms(fedtest.Percentile(r.post, .99)), ms(slices.Max(r.post))))
		key := metricKey(r.system)
		b.ReportMetric(r.converge.Seconds(), key+"-s")
		b.ReportMetric(r.load.Seconds(), key+"-load-s")
		b.ReportMetric(r.converge.Seconds()/base.minimumWork.Seconds(), key+"-ratio")
		b.ReportMetric(float64(r.peak)/1024, key+"-peak-rss-MiB")
		b.ReportMetric(float64(r.rss)/1024, key+"-rss-MiB")
		b.ReportMetric(float64(r.hostRSS)/1024, key+"-host-rss-MiB")
		b.ReportMetric(float64(r.procs.rss)/1024, key+"-all-processes-rss-MiB")
		logf("%s: the processes the benchmark started, the moment the bulk's last copy appeared: %s", r.system, r.procs)
		logf("%s: CPU from the bulk's first create until its last copy appeared: %s", r.system, r.cpu.String(r.converge.Seconds()))
		for i, peak := range r.replicaPeaks {
			logf("%s: replica-%d peak RSS %s", r.system, i, mib(peak))
			b.ReportMetric(float64(peak)/1024, fmt.Sprintf("%s-replica-%d-peak-rss-MiB", key, i))
		}
		b.ReportMetric(float64(fedtest.Percentile(r.quiet, .5).Microseconds())/1000, key+"-quiet-p50-ms")
		b.ReportMetric(float64(fedtest.Percentile(r.quiet, .99).Microseconds())/1000, key+"-quiet-p99-ms")
		b.ReportMetric(float64(fedtest.Percentile(r.post, .99).Microseconds())/1000, key+"-post-p99-ms")
		b.ReportMetric(float64(slices.Max(r.post).Microseconds())/1000, key+"-post-max-ms")
	}
	logf("bulk of %d FederatedDeployments on %d members, created at %d QPS:\n"+
		"| run | first write → all %d copies | load client's %d creates | ÷ minimum work | controller peak / after-bulk RSS | host kube-apiserver RSS after bulk | host kube-apiserver peak |\n|---|---|---|---|---|---|---|\n%s",
		p.n, p.members, qps, p.n*p.members, p.n, strings.Join(rows, "\n"))
	logf("create latency, create → seen in all %d members (quiet n=%d, right after the bulk n=%d):\n| system | quiet p50 | quiet p99 | post-bulk p99 | post-bulk max |\n|---|---|---|---|---|\n%s",
		p.members, p.quiet, p.post, strings.Join(lat, "\n"))
}

// metricKey is the prefix of a system's metrics: its name in lower case,
// with a dash for each run of characters other than letters and digits.
func metricKey(system string) string {
	fields := strings.FieldsFunc(strings.ToLower(system), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	return strings.Join(fields, "-")
}
