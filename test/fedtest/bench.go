package fedtest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// EnableDeployments creates the FederatedTypeConfig of Deployments on the
// host c and waits, up to a minute, until its propagation controller runs.
func EnableDeployments(t testing.TB, c client.Client) {
	t.Helper()
	ftc := &corev1beta1.FederatedTypeConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "deployments.apps"},
		Spec: corev1beta1.FederatedTypeConfigSpec{
			TargetType:    corev1beta1.APIResource{Group: "apps", Version: "v1", Kind: "Deployment", PluralName: "deployments", Scope: corev1beta1.NamespaceScoped},
			FederatedType: corev1beta1.APIResource{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment", PluralName: "federateddeployments", Scope: corev1beta1.NamespaceScoped},
			Propagation:   corev1beta1.Enabled,
		},
	}
	if err := c.Create(t.Context(), ftc); err != nil {
		t.Fatalf("enabling Deployments: %v", err)
	}
	poll.Eventually(t, time.Minute, "deployments.apps to be Running", func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(ftc), ftc); err != nil {
			return false, err.Error()
		}
		return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
	})
}

// Arrivals watches the Deployments of a namespace in some members and
// tells when each name has been seen in all of them.
type Arrivals struct {
	mu      sync.Mutex
	seen    map[string]int
	total   int
	waiters map[string]chan struct{}
	members int
	// All is closed once the watches have seen want Deployments in all.
	All  chan struct{}
	want int
}

// WatchArrivals starts watching the Deployments created in namespace from
// now on in members, until stop is called; want (or -1) is how many
// arrivals close All.
func WatchArrivals(ctx context.Context, namespace string, members []kubernetes.Interface, want int) (a *Arrivals, stop func(), err error) {
	a = &Arrivals{seen: map[string]int{}, waiters: map[string]chan struct{}{}, All: make(chan struct{}), want: want, members: len(members)}
	ctx, cancel := context.WithCancel(ctx)
	for _, m := range members {
		// From the list's resourceVersion: only objects created from now on.
		list, err := m.AppsV1().Deployments(namespace).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			cancel()
			return nil, nil, err
		}
		// The API server ends a watch that falls behind (as one of 20,000
		// arrivals on a busy machine may): the retry watcher watches again
		// from the last event it passed on, so no arrival is missed.
		deployments := m.AppsV1().Deployments(namespace)
		w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.AllowWatchBookmarks = true
				return deployments.Watch(ctx, o)
			},
		})
		if err != nil {
			cancel()
			return nil, nil, err
		}
		go func() {
			for ev := range w.ResultChan() {
				if d, ok := ev.Object.(*appsv1.Deployment); ok && ev.Type == watch.Added {
					a.arrived(d.Name)
				}
			}
		}()
	}
	return a, cancel, nil
}

// Expect returns a channel closed when name has arrived in every member.
func (a *Arrivals) Expect(name string) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(chan struct{})
	a.waiters[name] = ch
	return ch
}

func (a *Arrivals) arrived(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.seen[name]++
	a.total++
	if a.seen[name] == a.members {
		if ch, ok := a.waiters[name]; ok {
			close(ch)
		}
	}
	if a.total == a.want {
		close(a.All)
	}
}

// BenchDeployment is the Deployment the benchmarks write directly: one
// nginx replica labelled app=bench.
func BenchDeployment(namespace, name string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"app": "bench"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}},
			},
		},
	}
}

// BenchFederatedDeployment is a FederatedDeployment of the same Deployment,
// placed on clusters.
func BenchFederatedDeployment(namespace, name string, clusters ...string) *unstructured.Unstructured {
	placement := []any{}
	for _, c := range clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "bench"}},
				"spec": map[string]any{
					"replicas": int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": "bench"}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": "bench"}},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}},
					},
				},
			},
			"placement": map[string]any{"clusters": placement},
		},
	}}
}

// MustKube returns a clientset of cfg without client-side rate limits,
// failing tb if it cannot be built.
func MustKube(tb testing.TB, cfg *rest.Config) kubernetes.Interface {
	tb.Helper()
	kc, err := kubernetes.NewForConfig(Unthrottled(cfg))
	if err != nil {
		tb.Fatal(err)
	}
	return kc
}

// HostWrites is the API server's count of writes (every verb but get,
// list and watch) to the kinds of group so far, from its
// apiserver_request_total: for types.kubefed.io, the federated resources,
// their status and their CPVs.
func HostWrites(ctx context.Context, kube kubernetes.Interface, group string) (float64, error) {
	counts, err := HostWriteCounts(ctx, kube, group)
	var total float64
	for _, n := range counts {
		total += n
	}
	return total, err
}

// HostWriteCounts is HostWrites by verb, resource and subresource, each
// key "VERB resource[/subresource]".
func HostWriteCounts(ctx context.Context, kube kubernetes.Interface, group string) (map[string]float64, error) {
	raw, err := kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	counts := map[string]float64{}
	for line := range strings.SplitSeq(string(raw), "\n") {
		labels, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok || !strings.Contains(labels, `group="`+group+`"`) {
			continue
		}
		verb := label(labels, "verb")
		if verb == "GET" || verb == "LIST" || verb == "WATCH" {
			continue
		}
		key := verb + " " + label(labels, "resource")
		if sub := label(labels, "subresource"); sub != "" {
			key += "/" + sub
		}
		var n float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &n); err == nil {
			counts[key] += n
		}
	}
	return counts, nil
}

// label is the value of name in labels, a metric's `k="v",...` text.
func label(labels, name string) string {
	_, v, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}
