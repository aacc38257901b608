// Package drift measures how fast Fedwarden heals a member copy changed out
// of band (remediation Enforce) and how fast it shows the change in the
// ClusterPropagatedVersion (remediation Alert), beside a minimal healer in
// the test process that re-applies on any change it sees. Results and the
// command that reproduces them are in bench/RESULTS.md.
package drift

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

const (
	namespace = "bench"
	// resources is how many objects each part edits in turn, in each
	// member; smokeResources in a smoke test (fedtest.Smoke).
	resources, smokeResources = 20, 3
	// edits is how many out-of-band edits each part makes, one at a time;
	// smokeEdits, three in each member, in a smoke test.
	edits, smokeEdits = 100, 6
	// desiredImage is the image every desired Deployment has.
	desiredImage = "nginx:1.27"
	imagePath    = "/spec/template/spec/containers/0/image"
	// editor is the field manager of the out-of-band edits.
	editor = "kubectl-edit"
	// healerManager is the field manager of the baseline healer.
	healerManager = "direct-healer"
	// healerLabel marks the Deployments the baseline healer owns.
	healerLabel = "healer"
	// waitLimit bounds every wait for one heal or one status.
	waitLimit = time.Minute
)

var cpvResource = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "clusterpropagatedversions"}

// bed is a host with two joined members, whose kube-controller-managers run
// no deployment controller (member Deployments change only when written),
// and a controller-manager with its default flags.
type bed struct {
	fed      *localfed.Federation
	cm       *fedtest.ControllerManager
	host     client.Client
	clusters []string
	members  []kubernetes.Interface
	// deployments are what each member's watch has seen, by name.
	deployments []*seenLog[*appsv1.Deployment]
	// cpvs is what the host's watch has seen of the CPVs, by name.
	cpvs *seenLog[*typesv1beta1.ClusterPropagatedVersion]
	// resources and edits are the sizes of each part: resources and edits,
	// or smaller in a smoke test.
	resources, edits int
}

func startBed(b *testing.B) *bed {
	b.Helper()
	ctrllog.SetLogger(logr.Discard())
	s := fedtest.SteadySettings
	fb := fedtest.StartBed(b, fedtest.Options{ControllerManager: &s, Join: true, Unthrottled: true,
		Federation: []localfed.Option{localfed.WithMembers(2), localfed.WithControllers(fedtest.JoinControllers...)}})
	f := fb.Fed
	bd := &bed{fed: f, cm: fb.CM, host: fb.Host, resources: fedtest.BenchN(b, resources, smokeResources), edits: fedtest.BenchN(b, edits, smokeEdits)}
	for _, m := range f.Members {
		bd.clusters = append(bd.clusters, m.Name)
		bd.members = append(bd.members, fedtest.MustKube(b, m.Config))
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	for _, c := range append([]kubernetes.Interface{fedtest.MustKube(b, f.Host.Config)}, bd.members...) {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, m := range bd.members {
		bd.deployments = append(bd.deployments, watchDeployments(ctx, b, m, ""))
	}
	bd.cpvs = watchCPVs(ctx, b, f.Host.Config)
	fedtest.EnableDeployments(b, bd.host)
	return bd
}

// seen is one version of an object, and when a watch delivered it.
type seen[T any] struct {
	obj T
	at  time.Time
}

// seenLog keeps the latest version of each object a watch delivered, and
// wakes those waiting for a version that satisfies a condition.
type seenLog[T any] struct {
	mu      sync.Mutex
	latest  map[string]seen[T]
	waiters []*waiter[T]
}

type waiter[T any] struct {
	name string
	ok   func(T) bool
	done chan seen[T]
}

func newSeenLog[T any]() *seenLog[T] { return &seenLog[T]{latest: map[string]seen[T]{}} }

func (l *seenLog[T]) observe(name string, obj T) {
	s := seen[T]{obj: obj, at: time.Now()}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latest[name] = s
	l.waiters = slices.DeleteFunc(l.waiters, func(w *waiter[T]) bool {
		if w.name != name || !w.ok(obj) {
			return false
		}
		w.done <- s
		return true
	})
}

// wait returns the first version of name that satisfies ok: the latest one
// seen if it does, else the next one that does, within waitLimit.
func (l *seenLog[T]) wait(name string, ok func(T) bool) (seen[T], error) {
	l.mu.Lock()
	if s, found := l.latest[name]; found && ok(s.obj) {
		l.mu.Unlock()
		return s, nil
	}
	w := &waiter[T]{name: name, ok: ok, done: make(chan seen[T], 1)}
	l.waiters = append(l.waiters, w)
	l.mu.Unlock()
	select {
	case s := <-w.done:
		return s, nil
	case <-time.After(waitLimit):
		l.mu.Lock()
		defer l.mu.Unlock()
		l.waiters = slices.DeleteFunc(l.waiters, func(o *waiter[T]) bool { return o == w })
		return seen[T]{}, fmt.Errorf("%s: no version as wanted within %s; latest %+v", name, waitLimit, l.latest[name].obj)
	}
}

// watchDeployments follows the Deployments of the bench namespace in a
// member, those matching selector.
func watchDeployments(ctx context.Context, b *testing.B, kc kubernetes.Interface, selector string) *seenLog[*appsv1.Deployment] {
	l := newSeenLog[*appsv1.Deployment]()
	factory := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector }))
	inf := factory.Apps().V1().Deployments().Informer()
	observe := func(obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			l.observe(d.Name, d)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the Deployments informer did not sync")
	}
	return l
}

// watchCPVs follows the ClusterPropagatedVersions of the bench namespace in
// the host.
func watchCPVs(ctx context.Context, b *testing.B, cfg *rest.Config) *seenLog[*typesv1beta1.ClusterPropagatedVersion] {
	l := newSeenLog[*typesv1beta1.ClusterPropagatedVersion]()
	dyn, err := dynamic.NewForConfig(fedtest.Unthrottled(cfg))
	if err != nil {
		b.Fatal(err)
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil)
	inf := factory.ForResource(cpvResource).Informer()
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cpv); err == nil {
			l.observe(cpv.Name, cpv)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}); err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the CPV informer did not sync")
	}
	return l
}

func imageOf(d *appsv1.Deployment) string { return d.Spec.Template.Spec.Containers[0].Image }

func revision(obj metav1.Object) int64 {
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return rv
}

// entry returns the CPV's entry of cluster.
func entry(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) typesv1beta1.ClusterVersion {
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			return cv
		}
	}
	return typesv1beta1.ClusterVersion{}
}

func cpvName(name string) string { return "deployment-" + name }

// edit changes the image of a member Deployment as kubectl edit does (an
// update by another field manager), and returns the updated object and when
// the response came.
func edit(ctx context.Context, kc kubernetes.Interface, name, image string) (*appsv1.Deployment, time.Time, error) {
	for {
		d, err := kc.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, time.Time{}, err
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		got, err := kc.AppsV1().Deployments(namespace).Update(ctx, d, metav1.UpdateOptions{FieldManager: editor})
		at := time.Now()
		if apierrors.IsConflict(err) {
			continue
		}
		return got, at, err
	}
}

// target is the member copy that edit k changes: the objects in turn, in
// one member and then the other, so that two edits in a row never touch
// the same object (nor, in Fedwarden, the same federated resource).
func (bd *bed) target(k int) (member, object int) {
	return (k / bd.resources) % 2, k % bd.resources
}

// BenchmarkDriftHeal edits member Deployments out of band, 100 times one at
// a time, and measures: for a minimal healer in the test process
// (baseline) and for Fedwarden under remediation Enforce, the time from the
// edit's response until the member's watch sees the image back; for
// Fedwarden under remediation Alert, the time until the host's watch sees
// the CPV entry of that cluster ModifiedOutOfBand on the image's path. It
// also reports member writes per heal and the controller-manager's drift
// histograms.
//
//	go test ./bench/drift/ -run '^$' -bench . -benchtime 1x -timeout 40m
func BenchmarkDriftHeal(b *testing.B) {
	bd := startBed(b)
	b.Run("baseline", bd.benchBaseline)
	b.Run("enforce", bd.benchEnforce)
	b.Run("alert", bd.benchAlert)
}

// benchBaseline measures a healer that, on seeing a Deployment whose image
// is not the desired one, server-side applies the desired Deployment back at
// once: re-apply on any change, nothing classified or recorded. Fedwarden
// does not manage these Deployments.
func (bd *bed) benchBaseline(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var healers []*healer
	for i, kc := range bd.members {
		h := startHealer(ctx, b, kc)
		healers = append(healers, h)
		for j := range bd.resources {
			if err := h.apply(ctx, directName(j)); err != nil {
				b.Fatal(err)
			}
		}
		for j := range bd.resources {
			if _, err := bd.deployments[i].wait(directName(j), func(d *appsv1.Deployment) bool { return imageOf(d) == desiredImage }); err != nil {
				b.Fatal(err)
			}
		}
	}
	for range b.N {
		before := healers[0].writes.Load() + healers[1].writes.Load()
		healed := make([]time.Duration, 0, bd.edits)
		for k := range bd.edits {
			m, j := bd.target(k)
			at, heal, err := bd.healAfterEdit(ctx, m, directName(j), k)
			if err != nil {
				b.Fatal(err)
			}
			healed = append(healed, heal.at.Sub(at))
		}
		writes := healers[0].writes.Load() + healers[1].writes.Load() - before
		reportDurations(b, "healed", healed)
		b.ReportMetric(float64(writes)/float64(bd.edits), "writes/heal")
	}
}

// healAfterEdit makes edit k of member m's Deployment name and returns when
// the edit's response came, and the first version the member's watch saw
// with the desired image again.
func (bd *bed) healAfterEdit(ctx context.Context, m int, name string, k int) (time.Time, seen[*appsv1.Deployment], error) {
	edited, at, err := edit(ctx, bd.members[m], name, fmt.Sprintf("nginx:edit-%d", k))
	if err != nil {
		return at, seen[*appsv1.Deployment]{}, err
	}
	after := revision(edited)
	s, err := bd.deployments[m].wait(name, func(d *appsv1.Deployment) bool {
		return revision(d) > after && imageOf(d) == desiredImage
	})
	if err != nil {
		return at, s, fmt.Errorf("edit %d of %s in %s was not healed: %w", k, name, bd.clusters[m], err)
	}
	return at, s, nil
}

func directName(j int) string { return fmt.Sprintf("direct-%d", j) }

// healer is the baseline: an informer on the Deployments it owns in one
// member, and a server-side apply of the desired Deployment whenever one is
// seen with another image.
type healer struct {
	kc     kubernetes.Interface
	writes atomic.Int64
}

func startHealer(ctx context.Context, b *testing.B, kc kubernetes.Interface) *healer {
	h := &healer{kc: kc}
	factory := informers.NewSharedInformerFactoryWithOptions(kc, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = healerLabel + "=direct" }))
	inf := factory.Apps().V1().Deployments().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
		if d, ok := obj.(*appsv1.Deployment); ok && imageOf(d) != desiredImage {
			_ = h.apply(ctx, d.Name) // a failed heal shows as a timeout
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("the healer's informer did not sync")
	}
	return h
}

func (h *healer) apply(ctx context.Context, name string) error {
	raw, err := json.Marshal(desiredDeployment(name))
	if err != nil {
		return err
	}
	h.writes.Add(1)
	_, err = h.kc.AppsV1().Deployments(namespace).Patch(ctx, name, types.ApplyPatchType, raw, metav1.PatchOptions{FieldManager: healerManager, Force: new(true)})
	return err
}

// desiredDeployment is the baseline's desired Deployment: the one
// Fedwarden's template describes, with the healer's label.
func desiredDeployment(name string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": "bench"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app": "bench", healerLabel: "direct"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: desiredImage}}},
			},
		},
	}
}

// benchEnforce measures Fedwarden's heal under remediation Enforce (the
// default), its member writes per heal and its drift histograms. After each
// heal it waits until the CPV records the healed copy, so that every edit
// meets an idle controller.
func (bd *bed) benchEnforce(b *testing.B) {
	ctx := context.Background()
	names := bd.federate(b, "web", "")
	for range b.N {
		writesBefore := bd.memberWrites(b)
		detectBefore, remedyBefore := bd.histogram(b, "fedwarden_drift_detection_seconds"), bd.histogram(b, "fedwarden_drift_remediation_seconds")
		healed := make([]time.Duration, 0, bd.edits)
		recorded := make([]time.Duration, 0, bd.edits)
		for k := range bd.edits {
			m, j := bd.target(k)
			at, heal, err := bd.healAfterEdit(ctx, m, names[j], k)
			if err != nil {
				b.Fatalf("%v\n(controller-manager log: %s)", err, bd.cm.LogPath)
			}
			healed = append(healed, heal.at.Sub(at))
			c, err := bd.cpvs.wait(cpvName(names[j]), func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
				cv := entry(cpv, bd.clusters[m])
				return cv.Version == heal.obj.ResourceVersion && cv.State == typesv1beta1.InSync
			})
			if err != nil {
				b.Fatalf("the heal of edit %d was not recorded: %v", k, err)
			}
			recorded = append(recorded, c.at.Sub(at))
		}
		writes := bd.memberWrites(b) - writesBefore
		detect := bd.histogram(b, "fedwarden_drift_detection_seconds").minus(detectBefore)
		remedy := bd.histogram(b, "fedwarden_drift_remediation_seconds").minus(remedyBefore)
		if writes != float64(bd.edits) || remedy.count != float64(bd.edits) || detect.count < float64(bd.edits) {
			b.Fatalf("for %d edits, each healed: %v member writes and %v remediations, want one per heal; %v drift classifications, want at least one per edit", bd.edits, writes, remedy.count, detect.count)
		}
		reportDurations(b, "healed", healed)
		reportDurations(b, "recorded", recorded)
		b.ReportMetric(writes/float64(bd.edits), "writes/heal")
		reportHistogram(b, "detect", detect)
		reportHistogram(b, "remedy", remedy)
	}
}

// benchAlert measures, under remediation Alert, the time from an edit until
// the CPV shows it. Each edit is then undone (the desired image written back
// by the same field manager, which is no drift) and the CPV entry is waited
// for InSync, so that every edit is a new drift.
func (bd *bed) benchAlert(b *testing.B) {
	ctx := context.Background()
	names := bd.federate(b, "alert", "Alert")
	for range b.N {
		writesBefore := bd.memberWrites(b)
		detectBefore := bd.histogram(b, "fedwarden_drift_detection_seconds")
		visible := make([]time.Duration, 0, bd.edits)
		for k := range bd.edits {
			m, j := bd.target(k)
			cluster := bd.clusters[m]
			_, at, err := edit(ctx, bd.members[m], names[j], fmt.Sprintf("nginx:edit-%d", k))
			if err != nil {
				b.Fatal(err)
			}
			c, err := bd.cpvs.wait(cpvName(names[j]), func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
				cv := entry(cpv, cluster)
				return cv.State == typesv1beta1.ModifiedOutOfBand && slices.Contains(cv.ChangedPaths, imagePath) && slices.Contains(cv.ChangedBy, editor)
			})
			if err != nil {
				b.Fatalf("edit %d was not reported: %v\n(controller-manager log: %s)", k, err, bd.cm.LogPath)
			}
			visible = append(visible, c.at.Sub(at))
			if _, _, err := edit(ctx, bd.members[m], names[j], desiredImage); err != nil {
				b.Fatal(err)
			}
			if _, err := bd.cpvs.wait(cpvName(names[j]), func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
				return entry(cpv, cluster).State == typesv1beta1.InSync
			}); err != nil {
				b.Fatalf("undoing edit %d did not bring the entry back to InSync: %v", k, err)
			}
		}
		writes := bd.memberWrites(b) - writesBefore
		detect := bd.histogram(b, "fedwarden_drift_detection_seconds").minus(detectBefore)
		if writes != 0 || detect.count < float64(bd.edits) {
			b.Fatalf("for %d edits under Alert, each reported: %v member writes, want 0; %v drift classifications, want at least one per edit", bd.edits, writes, detect.count)
		}
		reportDurations(b, "visible", visible)
		b.ReportMetric(writes, "member-writes")
		reportHistogram(b, "detect", detect)
	}
}

// federate creates prefix-0…19, FederatedDeployments placed on both
// members with the given remediation ("" for the default), and waits until
// both members have their copies and the CPVs say InSync.
func (bd *bed) federate(b *testing.B, prefix string, remediation string) []string {
	ctx := context.Background()
	var names []string
	for j := range bd.resources {
		name := fmt.Sprintf("%s-%d", prefix, j)
		names = append(names, name)
		if err := bd.host.Create(ctx, federatedDeployment(name, bd.clusters, remediation)); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range names {
		for m := range bd.members {
			if _, err := bd.deployments[m].wait(name, func(d *appsv1.Deployment) bool { return imageOf(d) == desiredImage }); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := bd.cpvs.wait(cpvName(name), func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
			return entry(cpv, bd.clusters[0]).State == typesv1beta1.InSync && entry(cpv, bd.clusters[1]).State == typesv1beta1.InSync
		}); err != nil {
			b.Fatal(err)
		}
	}
	return names
}

func federatedDeployment(name string, clusters []string, remediation string) *unstructured.Unstructured {
	fed := fedtest.BenchFederatedDeployment(namespace, name, clusters...)
	if remediation != "" {
		fed.Object["spec"].(map[string]any)["driftPolicy"] = map[string]any{"remediation": remediation}
	}
	return fed
}

// memberWrites sums the controller-manager's apply writes to the members,
// once the sum has stopped moving for a second.
func (bd *bed) memberWrites(b *testing.B) float64 {
	return bd.cm.SettledSum(b, "fedwarden_member_writes_total", `verb="apply"`)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func reportDurations(b *testing.B, what string, d []time.Duration) {
	b.ReportMetric(ms(fedtest.Percentile(d, .5)), what+"-p50-ms")
	b.ReportMetric(ms(fedtest.Percentile(d, .99)), what+"-p99-ms")
	b.ReportMetric(ms(slices.Max(d)), what+"-max-ms")
}

// histogram is a Prometheus histogram as the metrics endpoint exports it:
// cumulative counts by upper bound.
type histogram struct {
	bounds     []float64 // ascending, the last +Inf
	cumulative []float64
	sum, count float64
}

// histogram reads one histogram from the controller-manager.
func (bd *bed) histogram(b *testing.B, name string) histogram {
	req, err := http.NewRequest(http.MethodGet, bd.cm.MetricsURL, nil)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	type bucket struct{ le, n float64 }
	var (
		buckets []bucket
		h       histogram
	)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, name+"_bucket{"):
			_, rest, _ := strings.Cut(line, `le="`)
			le, _, _ := strings.Cut(rest, `"`)
			bound := math.Inf(1)
			if le != "+Inf" {
				if bound, err = strconv.ParseFloat(le, 64); err != nil {
					continue
				}
			}
			buckets = append(buckets, bucket{bound, v})
		case strings.HasPrefix(line, name+"_sum "):
			h.sum = v
		case strings.HasPrefix(line, name+"_count "):
			h.count = v
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].le < buckets[j].le })
	for _, bk := range buckets {
		h.bounds = append(h.bounds, bk.le)
		h.cumulative = append(h.cumulative, bk.n)
	}
	return h
}

// minus is what h counted since before.
func (h histogram) minus(before histogram) histogram {
	d := histogram{bounds: h.bounds, sum: h.sum - before.sum, count: h.count - before.count}
	for i, n := range h.cumulative {
		if i < len(before.cumulative) {
			n -= before.cumulative[i]
		}
		d.cumulative = append(d.cumulative, n)
	}
	return d
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear interpolation within the bucket that holds it.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := q * h.count
	for i, n := range h.cumulative {
		if n < rank {
			continue
		}
		if math.IsInf(h.bounds[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.bounds[i-1]
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = h.bounds[i-1], h.cumulative[i-1]
		}
		if n == below {
			return h.bounds[i]
		}
		return lower + (h.bounds[i]-lower)*(rank-below)/(n-below)
	}
	return math.NaN()
}

func reportHistogram(b *testing.B, what string, h histogram) {
	b.ReportMetric(h.count, what+"-count")
	if h.count == 0 {
		return
	}
	b.ReportMetric(1000*h.sum/h.count, what+"-mean-ms")
	b.ReportMetric(1000*h.quantile(.5), what+"-p50-ms")
	b.ReportMetric(1000*h.quantile(.99), what+"-p99-ms")
}
