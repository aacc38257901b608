// Package dependencies measures what spec.propagateDependencies costs
// (issue 32): FederatedDeployments that take a ConfigMap and a Secret each
// with them, against as many without, on one bed. Results and the command
// that reproduces them are in bench/RESULTS.md.
package dependencies

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const (
	// plainNamespace holds the workloads without dependencies, depsNamespace
	// those with, warmNamespace the one that shows the bed works.
	plainNamespace   = "plain"
	depsNamespace    = "deps"
	warmNamespace    = "warmup"
	controlNamespace = "control"
	// qps is the pace of the load client, as in the other benchmarks.
	qps = 100
)

var (
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets     = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// BenchmarkDependencies runs, on one bed of a host and three members with
// `fedwarden controller-manager --propagate-dependencies` (and the flags in
// FEDWARDEN_BENCH_ARGS), N (1,000; 20 in a smoke run) FederatedDeployments
// placed on every member, created at 100 QPS, twice: (a) plain, and (b)
// each with spec.propagateDependencies and a ConfigMap (a volume) and a
// Secret (env secretKeyRef) of its own, created on the host before the
// workloads. It reports the time from the first workload's create until
// the members' watches have seen every copy — for (b) every Deployment,
// ConfigMap and Secret — the ratio (b)/(a) (issue 32's goal: at most 1.5),
// the member writes per copy and the host writes per workload (to
// types.kubefed.io: its creation, its dependencies and every record). The
// baseline (c) has the client write the same 9,000 copies' federated
// resources itself (N FederatedDeployments, FederatedConfigMaps and
// FederatedSecrets, three per tick at the same pace), without the
// dependencies stage: (b)/(c) is what the stage costs.
// It fails unless every member holds every copy and each copy took one
// member write.
//
//	go test ./bench/dependencies/ -run '^$' -bench BenchmarkDependencies -benchtime 1x -timeout 30m
func BenchmarkDependencies(b *testing.B) {
	n := fedtest.BenchN(b, 1000, 20)
	bd := startBed(b)
	for range b.N {
		bd.warmUp(b)
		plain := bd.measure(b, plainNamespace, n, false)
		deps := bd.measure(b, depsNamespace, n, true)
		control := bd.measureControl(b, n)
		_, peak, err := fedtest.ProcessMemory(bd.fb.CM.PID())
		if err != nil {
			b.Fatal(err)
		}
		logf("controller-manager peak RSS %.0f MiB", float64(peak)/1024)
		b.ReportMetric(plain.converge.Seconds(), "plain-s")
		b.ReportMetric(deps.converge.Seconds(), "dependencies-s")
		b.ReportMetric(deps.converge.Seconds()/plain.converge.Seconds(), "ratio")
		b.ReportMetric(control.converge.Seconds(), "control-s")
		b.ReportMetric(deps.converge.Seconds()/control.converge.Seconds(), "ratio-to-control")
		b.ReportMetric(deps.deployments.Seconds(), "dependencies-deployments-s")
		b.ReportMetric(plain.writesPerCopy, "plain-member-writes-per-copy")
		b.ReportMetric(deps.writesPerCopy, "dependencies-member-writes-per-copy")
		b.ReportMetric(plain.hostWrites, "plain-host-writes-per-workload")
		b.ReportMetric(deps.hostWrites, "dependencies-host-writes-per-workload")
		b.ReportMetric(control.hostWrites, "control-host-writes-per-workload")
		b.ReportMetric(float64(peak)/1024, "controller-peak-rss-MiB")
	}
}

// bed is a host and three joined members running a controller-manager
// with the dependencies stage, Deployments, ConfigMaps and Secrets enabled.
type bed struct {
	fb       *fedtest.Bed
	hostKube kubernetes.Interface
	// hostWrites is the last settled count of host writes (settledHostWrites).
	hostWrites map[string]float64
	members    []metadata.Interface
	clusters   []string
}

func startBed(b *testing.B) *bed {
	b.Helper()
	ctrllog.SetLogger(logr.Discard()) // before the bed makes its clients
	s := fedtest.SteadySettings
	s.Args = append([]string{"--propagate-dependencies"}, strings.Fields(os.Getenv("FEDWARDEN_BENCH_ARGS"))...)
	fb := fedtest.StartBed(b, fedtest.Options{
		ControllerManager: &s, Join: true, Unthrottled: true,
		Enable:     []string{"deployments.apps", "configmaps", "secrets"},
		Federation: []localfed.Option{localfed.WithMembers(3), localfed.WithControllers(memberControllers()...)},
	})
	bd := &bed{fb: fb, hostKube: fedtest.MustKube(b, fb.Fed.Host.Config)}
	kubes := []kubernetes.Interface{bd.hostKube}
	for _, m := range fb.Fed.Members {
		kubes = append(kubes, fedtest.MustKube(b, m.Config))
		mc, err := metadata.NewForConfig(fedtest.Unthrottled(m.Config))
		if err != nil {
			b.Fatal(err)
		}
		bd.members = append(bd.members, mc)
		bd.clusters = append(bd.clusters, m.Name)
	}
	for _, c := range kubes {
		for _, ns := range []string{plainNamespace, depsNamespace, warmNamespace, controlNamespace} {
			if _, err := c.CoreV1().Namespaces().Create(b.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	return bd
}

// memberControllers are the members' default kube-controller-manager
// controllers without the workload ones, as in bench/bulk: the machine
// measures the federation, not ReplicaSets and Pods.
func memberControllers() []string {
	return slices.DeleteFunc(slices.Clone(localfed.DefaultControllers), func(c string) bool {
		return c == "deployment-controller" || c == "replicaset-controller"
	})
}

// result is one part's figures.
type result struct {
	converge      time.Duration // first workload create → every copy seen
	deployments   time.Duration // first workload create → every Deployment copy seen
	writesPerCopy float64
	// hostWrites is the host's writes to types.kubefed.io per workload,
	// its creation and its dependencies' included, once they had settled.
	hostWrites float64
}

// warmUp sends one workload with its dependencies and waits until every
// member has its three objects: the bed works, and the members' caches of
// the three kinds are started before anything is timed.
func (bd *bed) warmUp(b *testing.B) {
	r := bd.measure(b, warmNamespace, 1, true)
	logf("warm-up: one workload and its 2 dependencies reached the %d members in %s", len(bd.members), r.converge.Round(time.Millisecond))
}

// measureControl is (c): the client writes, three per tick at 100 ticks a
// second, a plain FederatedDeployment, a FederatedConfigMap and a
// FederatedSecret per i, all placed on every member, and times them as
// measure does.
func (bd *bed) measureControl(b *testing.B, n int) result {
	return bd.timed(b, controlNamespace, n, []schema.GroupVersionResource{deployments, configMaps, secrets}, func(ctx context.Context, i int) error {
		for _, obj := range []*unstructured.Unstructured{
			workload(controlNamespace, name(i), false, bd.clusters),
			federated("FederatedConfigMap", name(i)+"-config", map[string]any{"data": map[string]any{"mode": "blue"}}, bd.clusters),
			federated("FederatedSecret", name(i)+"-secret", map[string]any{"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("bench-" + name(i)))}}, bd.clusters),
		} {
			if err := bd.fb.Host.Create(ctx, obj); err != nil {
				return err
			}
		}
		return nil
	})
}

// federated is a Federated<Kind> of (c), in the control namespace, with
// template, placed on clusters.
func federated(kind, name string, template map[string]any, clusters []string) *unstructured.Unstructured {
	var placed []any
	for _, c := range clusters {
		placed = append(placed, map[string]any{"name": c})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": kind,
		"metadata": map[string]any{"namespace": controlNamespace, "name": name},
		"spec":     map[string]any{"template": template, "placement": map[string]any{"clusters": placed}},
	}}
}

// measure creates n workloads named app-<i> in ns at 100 QPS, with a
// ConfigMap and a Secret each if withDeps, and times them until every
// member has seen every copy. It then checks the members' objects and the
// controller-manager's member writes.
func (bd *bed) measure(b *testing.B, ns string, n int, withDeps bool) result {
	ctx := b.Context()
	gvrs := []schema.GroupVersionResource{deployments}
	if withDeps {
		gvrs = append(gvrs, configMaps, secrets)
		start := time.Now()
		if err := fedtest.Paced(ctx, qps, n, func(i int) error { return bd.createDependencies(ctx, ns, name(i)) }); err != nil {
			b.Fatal(err)
		}
		logf("%s: %d ConfigMaps and %d Secrets created on the host in %s", ns, n, n, time.Since(start).Round(time.Millisecond))
	}
	return bd.timed(b, ns, n, gvrs, func(ctx context.Context, i int) error {
		return bd.fb.Host.Create(ctx, workload(ns, name(i), withDeps, bd.clusters))
	})
}

// timed runs create for i in [0, n) at 100 QPS and times it until every
// member has seen n copies of each of gvrs in ns; it then checks the
// members' objects and the controller-manager's member writes.
func (bd *bed) timed(b *testing.B, ns string, n int, gvrs []schema.GroupVersionResource, create func(context.Context, int) error) result {
	ctx := b.Context()
	writesBefore, hostBefore := bd.memberWrites(b), bd.hostWrites
	if hostBefore == nil {
		hostBefore = bd.settledHostWrites(b)
	}
	reconcilesBefore := bd.reconciles(b)
	want := n * len(bd.members)
	w, err := watchCreated(ctx, bd.members, ns, gvrs, want)
	if err != nil {
		b.Fatal(err)
	}
	defer w.stop()
	start := time.Now()
	if err := fedtest.Paced(ctx, qps, n, func(i int) error { return create(ctx, i) }); err != nil {
		b.Fatal(err)
	}
	select {
	case <-w.all:
	case <-time.After(deadline(n, len(gvrs))):
		b.Fatalf("%s: after %s the members' watches had seen %s copies, want %d of each", ns, deadline(n, len(gvrs)), w, want)
	}
	r := result{converge: time.Since(start), deployments: w.lastOf(deployments).Sub(start)}
	copies := want * len(gvrs)
	writes := bd.memberWrites(b) - writesBefore
	r.writesPerCopy = writes / float64(copies)
	hostAfter := bd.settledHostWrites(b)
	r.hostWrites = (total(hostAfter) - total(hostBefore)) / float64(n)
	logf("%s: %d workloads, %d copies in %.1f s (Deployments %.1f s); %.0f member writes (%.3f per copy); %.2f host writes per workload (%s); reconciles %s",
		ns, n, copies, r.converge.Seconds(), r.deployments.Seconds(), writes, r.writesPerCopy, r.hostWrites, perWorkload(hostBefore, hostAfter, n), bd.reconcilesSince(b, reconcilesBefore))
	bd.checkCopies(b, ns, gvrs, n)
	if writes != float64(copies) {
		b.Fatalf("%s: the controller-manager made %.0f member writes for %d copies, want one each (log: %s)", ns, writes, copies, bd.fb.CM.LogPath)
	}
	return r
}

// deadline bounds the wait for a part's copies of kinds kinds.
func deadline(n, kinds int) time.Duration {
	return 5*time.Minute + time.Duration(n*kinds)*120*time.Millisecond
}

func name(i int) string { return fmt.Sprintf("app-%d", i) }

// createDependencies creates on the host the ConfigMap <name>-config and
// the Secret <name>-secret that workload name needs.
func (bd *bed) createDependencies(ctx context.Context, ns, name string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-config"}, Data: map[string]string{"mode": "blue"}}
	if err := bd.fb.Host.Create(ctx, cm); err != nil {
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns, cm.Name, err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-secret"}, StringData: map[string]string{"password": "bench-" + name}}
	if err := bd.fb.Host.Create(ctx, s); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", ns, s.Name, err)
	}
	return nil
}

// workload is the benchmarks' FederatedDeployment placed on clusters; with
// deps, under spec.propagateDependencies, mounting ConfigMap <name>-config
// and reading Secret <name>-secret into its environment.
func workload(ns, name string, deps bool, clusters []string) *unstructured.Unstructured {
	fd := fedtest.BenchFederatedDeployment(ns, name, clusters...)
	if !deps {
		return fd
	}
	env := map[string]any{"name": "PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": name + "-secret", "key": "password"}}}
	pod := map[string]any{
		"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27", "env": []any{env}}},
		"volumes":    []any{map[string]any{"name": "config", "configMap": map[string]any{"name": name + "-config"}}},
	}
	spec := fd.Object["spec"].(map[string]any)
	spec["propagateDependencies"] = true
	spec["template"].(map[string]any)["spec"].(map[string]any)["template"].(map[string]any)["spec"] = pod
	return fd
}

// checkCopies fails b unless every member holds n objects named app-… of
// each of gvrs in ns.
func (bd *bed) checkCopies(b *testing.B, ns string, gvrs []schema.GroupVersionResource, n int) {
	for i, m := range bd.members {
		for _, gvr := range gvrs {
			list, err := m.Resource(gvr).Namespace(ns).List(b.Context(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			got := 0
			for _, o := range list.Items {
				if strings.HasPrefix(o.Name, "app-") {
					got++
				}
			}
			if got != n {
				b.Fatalf("member %s holds %d %s in %s, want %d", bd.clusters[i], got, gvr.Resource, ns, n)
			}
		}
	}
}

// settledHostWrites is the host's writes to types.kubefed.io, by verb and
// resource, once their total has not moved for three seconds: the status
// writes go on after the last copy appears. A part starts from the count
// the part before it settled on: nothing writes those kinds in between.
func (bd *bed) settledHostWrites(b *testing.B) map[string]float64 {
	var last map[string]float64
	for still := 0; still < 3; {
		now, err := fedtest.HostWriteCounts(b.Context(), bd.hostKube, "types.kubefed.io")
		if err != nil {
			b.Fatal(err)
		}
		if last != nil && total(now) == total(last) {
			still++
		} else {
			still = 0
		}
		last = now
		time.Sleep(time.Second)
	}
	bd.hostWrites = last
	return last
}

func total(counts map[string]float64) float64 {
	var n float64
	for _, c := range counts {
		n += c
	}
	return n
}

// perWorkload is after - before, each divided by n, as "KEY N.NN" sorted.
func perWorkload(before, after map[string]float64, n int) string {
	var out []string
	for key, c := range after {
		if d := c - before[key]; d > 0 {
			out = append(out, fmt.Sprintf("%s %.2f", key, d/float64(n)))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// memberWrites sums the controller-manager's apply writes to the members,
// once the sum has stopped moving.
func (bd *bed) memberWrites(b *testing.B) float64 {
	return bd.fb.CM.SettledSum(b, "fedwarden_member_writes_total", `verb="apply"`)
}

// controllers are the propagation controllers whose reconciles are logged.
var controllers = []string{"propagation-deployments.apps", "propagation-configmaps", "propagation-secrets"}

// reconciles returns the controllers' reconciles so far.
func (bd *bed) reconciles(b *testing.B) []float64 {
	out := make([]float64, len(controllers))
	for i, c := range controllers {
		v, _, err := bd.fb.CM.Sum(b.Context(), "controller_runtime_reconcile_total", fmt.Sprintf("controller=%q", c))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = v
	}
	return out
}

// reconcilesSince says how many reconciles each controller ran since before.
func (bd *bed) reconcilesSince(b *testing.B, before []float64) string {
	var parts []string
	for i, v := range bd.reconciles(b) {
		parts = append(parts, fmt.Sprintf("%s %.0f", controllers[i], v-before[i]))
	}
	return strings.Join(parts, ", ")
}

// logf prints a line of the run's record, with the time since the run
// started: b.Log would show it only at the end.
func logf(format string, args ...any) {
	fmt.Printf("%7.1fs  %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

var began = time.Now()

// created counts the objects named app-… that the members' watches see
// created, by resource, and when the last of each arrived.
type created struct {
	mu     sync.Mutex
	counts map[schema.GroupVersionResource]int
	last   map[schema.GroupVersionResource]time.Time
	want   int
	// all is closed once want objects of every resource have arrived.
	all  chan struct{}
	stop func()
}

// watchCreated starts watching, in ns of every member, the objects of gvrs
// created from now on, until stop is called; all closes once want of each
// resource have arrived.
func watchCreated(ctx context.Context, members []metadata.Interface, ns string, gvrs []schema.GroupVersionResource, want int) (*created, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &created{counts: map[schema.GroupVersionResource]int{}, last: map[schema.GroupVersionResource]time.Time{}, want: want, all: make(chan struct{}), stop: cancel}
	for _, gvr := range gvrs {
		c.counts[gvr] = 0
		for _, m := range members {
			if err := c.watch(ctx, m.Resource(gvr).Namespace(ns), gvr); err != nil {
				cancel()
				return nil, fmt.Errorf("watching %s in %s: %w", gvr.Resource, ns, err)
			}
		}
	}
	return c, nil
}

// watch follows r from its current resourceVersion, watching again from
// the last event when the API server ends a watch (as fedtest.WatchArrivals).
func (c *created) watch(ctx context.Context, r metadata.ResourceInterface, gvr schema.GroupVersionResource) error {
	list, err := r.List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.AllowWatchBookmarks = true
			return r.Watch(ctx, o)
		},
	})
	if err != nil {
		return err
	}
	go func() {
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(*metav1.PartialObjectMetadata); ok && ev.Type == watch.Added && strings.HasPrefix(o.Name, "app-") {
				c.arrived(gvr)
			}
		}
	}()
	return nil
}

func (c *created) arrived(gvr schema.GroupVersionResource) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[gvr]++
	c.last[gvr] = time.Now()
	if c.counts[gvr] != c.want {
		return
	}
	for _, n := range c.counts {
		if n < c.want {
			return
		}
	}
	close(c.all)
}

// lastOf is when the last object of gvr arrived.
func (c *created) lastOf(gvr schema.GroupVersionResource) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last[gvr]
}

// String lists the counts seen so far.
func (c *created) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var parts []string
	for gvr, n := range c.counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, gvr.Resource))
	}
	return strings.Join(parts, ", ")
}
