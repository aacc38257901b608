package health

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// tracker records, per object, the time from the start of its create call
// until watches have seen it ready in every cluster it must be ready in.
type tracker struct {
	clusters []string
	// describe, when set, tells the state of an object that did not get
	// everywhere in time, for the failure message.
	describe func(name string) string

	mu          sync.Mutex
	begun       map[string]time.Time
	ready       map[string]map[string]bool
	took        map[string]time.Duration
	done        map[string]chan struct{}
	first, last time.Time
}

func newTracker(clusters []string) *tracker {
	return &tracker{clusters: clusters, begun: map[string]time.Time{}, ready: map[string]map[string]bool{},
		took: map[string]time.Duration{}, done: map[string]chan struct{}{}}
}

// start records that the create call of name starts now; the channel it
// returns is closed once name is ready everywhere. It must be called before
// the create call, so that no watch event of the object comes first.
func (t *tracker) start(name string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.first.IsZero() {
		t.first = now
	}
	t.begun[name] = now
	t.ready[name] = map[string]bool{}
	ch := make(chan struct{})
	t.done[name] = ch
	return ch
}

// see records that a watch of cluster saw name ready. Objects not started
// are not the part's, and are left out.
func (t *tracker) see(name, cluster string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	begun, ok := t.begun[name]
	if !ok || t.ready[name][cluster] {
		return
	}
	t.ready[name][cluster] = true
	if len(t.ready[name]) < len(t.clusters) {
		return
	}
	now := time.Now()
	t.took[name] = now.Sub(begun)
	if now.After(t.last) {
		t.last = now
	}
	close(t.done[name])
}

// progress says where name is ready so far, and its state.
func (t *tracker) progress(name string) string {
	t.mu.Lock()
	var ready []string
	for c := range t.ready[name] {
		ready = append(ready, c)
	}
	t.mu.Unlock()
	slices.Sort(ready)
	msg := fmt.Sprintf("ready in [%s] of [%s]", strings.Join(ready, " "), strings.Join(t.clusters, " "))
	if t.describe != nil {
		msg += "; " + t.describe(name)
	}
	return msg
}

// waitAll waits until every object of names is ready everywhere, failing b
// after timeout.
func (t *tracker) waitAll(b *testing.B, names []string, timeout time.Duration) {
	b.Helper()
	deadline := time.After(timeout)
	for i, name := range names {
		t.mu.Lock()
		done := t.done[name]
		t.mu.Unlock()
		select {
		case <-done:
		case <-deadline:
			b.Fatalf("%d of %d objects got everywhere within %s; %s: %s", i, len(names), timeout, name, t.progress(name))
		}
	}
}

// result is what one part measured.
type result struct {
	// took is per object, from its create call until it was ready
	// everywhere.
	took []time.Duration
	// total is from the first create call until the last object was
	// ready everywhere.
	total time.Duration
}

// result returns the figures of names, every one of which is ready.
func (t *tracker) result(names []string) *result {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := &result{total: t.last.Sub(t.first)}
	for _, name := range names {
		r.took = append(r.took, t.took[name])
	}
	return r
}

func (r *result) report(b *testing.B, prefix string) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(fedtest.Percentile(r.took, .5)), prefix+"-p50-ms")
	b.ReportMetric(ms(fedtest.Percentile(r.took, .99)), prefix+"-p99-ms")
	b.ReportMetric(ms(slices.Max(r.took)), prefix+"-max-ms")
}

// watchRollouts tells tr when each member's Deployment of directNamespace
// has rolled out: its replicas updated and available, as `kubectl rollout
// status` waits for. It returns once the informers have listed what is
// there; they run until stop is called.
func (bd *bed) watchRollouts(b *testing.B, tr *tracker) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	for i, m := range bd.members {
		deployments := m.AppsV1().Deployments(directNamespace)
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return deployments.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return deployments.Watch(ctx, o)
			},
		}
		inform(ctx, b, lw, &appsv1.Deployment{}, func(obj any) {
			if d, ok := obj.(*appsv1.Deployment); ok && rolledOut(d) {
				tr.see(d.Name, bd.names[i])
			}
		})
	}
	return cancel
}

// inform runs an informer of lw's objects until ctx ends, calling seen
// with each object added or changed, and waits until it has listed them.
// An informer, rather than a bare watch, lists again when its watch
// expires, so that no change is missed on a busy machine.
func inform(ctx context.Context, b *testing.B, lw cache.ListerWatcher, obj runtime.Object, seen func(any)) {
	b.Helper()
	_, informer := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw,
		ObjectType:    obj,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    seen,
			UpdateFunc: func(_, cur any) { seen(cur) },
		},
	})
	go informer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		b.Fatal("an informer did not sync")
	}
}

// rolledOut tells whether d's replicas are all updated and available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want && s.AvailableReplicas == want
}

// watchCPVs tells tr when the CPV of a FederatedDeployment of namespace
// records its copy Healthy in every member, under the "host" cluster.
func (bd *bed) watchCPVs(b *testing.B, tr *tracker) (stop func()) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list := &typesv1beta1.ClusterPropagatedVersionList{}
			return list, bd.host.List(ctx, list, &client.ListOptions{Namespace: namespace, Raw: &o})
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return bd.host.Watch(ctx, &typesv1beta1.ClusterPropagatedVersionList{}, &client.ListOptions{Namespace: namespace, Raw: &o})
		},
	}
	inform(ctx, b, lw, &typesv1beta1.ClusterPropagatedVersion{}, func(obj any) {
		if cpv, ok := obj.(*typesv1beta1.ClusterPropagatedVersion); ok && healthyIn(cpv, bd.names) {
			// The CPV of FederatedDeployment x is deployment-x.
			tr.see(strings.TrimPrefix(cpv.Name, "deployment-"), "host")
		}
	})
	return cancel
}

// healthyIn tells whether the CPV records the copy Healthy in every one of
// clusters.
func healthyIn(cpv *typesv1beta1.ClusterPropagatedVersion, clusters []string) bool {
	healthy := 0
	for _, cv := range cpv.Status.ClusterVersions {
		if cv.Health == corev1beta1.HealthHealthy && slices.Contains(clusters, string(cv.ClusterName)) {
			healthy++
		}
	}
	return healthy == len(clusters)
}

// check fails b unless each member runs perMember Pods of each part on its
// KWOK Node, and the controller-manager made one member write per copy.
func (bd *bed) check(b *testing.B, perMember int) {
	b.Helper()
	ctx := context.Background()
	for i, m := range bd.members {
		for _, part := range []string{namespace, directNamespace} {
			pods, err := m.CoreV1().Pods(part).List(ctx, metav1.ListOptions{LabelSelector: "part=" + part})
			if err != nil {
				b.Fatal(err)
			}
			if running := runningOnKWOK(pods.Items); running != perMember {
				b.Fatalf("%s runs %d Pods of %s (of %d), want %d", bd.names[i], running, part, len(pods.Items), perMember)
			}
		}
	}
	if writes, copies := bd.memberWrites(b), perMember*len(bd.members); writes != float64(copies) {
		b.Fatalf("the controller-manager made %v member writes for %d copies, want one each (log: %s)", writes, copies, bd.cm.LogPath)
	}
}

// runningOnKWOK counts the Pods Running and Ready on the KWOK Node.
func runningOnKWOK(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != fedtest.KWOKNodeName || p.Status.Phase != corev1.PodRunning {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// memberWrites sums the controller-manager's apply writes to the members
// once the sum has stopped moving: the CPVs may show a copy before the
// controller has counted the write that made it.
func (bd *bed) memberWrites(b *testing.B) float64 {
	b.Helper()
	return bd.cm.SettledSum(b, "fedwarden_member_writes_total", `verb="apply"`)
}

// describeDirect tells the state of the baseline's Deployment name in each
// member.
func (bd *bed) describeDirect(name string) string {
	var parts []string
	for i, m := range bd.members {
		d, err := m.AppsV1().Deployments(directNamespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", bd.names[i], err))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: generation %d, status %+v", bd.names[i], d.Generation, d.Status))
	}
	return strings.Join(parts, "; ")
}

// describeFederated tells the conditions of FederatedDeployment name, what
// its CPV records per cluster, and how the controller-manager's log ends.
func (bd *bed) describeFederated(name string) string {
	ctx := context.Background()
	var parts []string
	fd := &typesv1beta1.FederatedDeployment{}
	if err := bd.host.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fd); err != nil {
		parts = append(parts, err.Error())
	} else {
		for _, c := range fd.Status.Conditions {
			parts = append(parts, fmt.Sprintf("%s %s (%s): %s", c.Type, c.Status, c.Reason, c.Message))
		}
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := bd.host.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "deployment-" + name}, cpv); err != nil {
		parts = append(parts, err.Error())
	} else {
		for _, cv := range cpv.Status.ClusterVersions {
			parts = append(parts, fmt.Sprintf("%s: %s, %s (%s)", cv.ClusterName, cv.State, cv.Health, cv.HealthReason))
		}
	}
	return strings.Join(parts, "; ") + "\nthe controller-manager's log ends with:\n" + logTail(bd.cm.LogPath, 20)
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
