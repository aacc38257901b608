package capacitysource_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/scheduler/capacitysource"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/test/poll"
)

const (
	member    = "member-1"
	namespace = "shop"
	reader    = "capacity-reader"
)

// TestCapacity measures a real member: two Ready nodes and a NotReady one,
// a pod bound to a node (never run: there is no kubelet) and a quota.
func TestCapacity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fed, err := localfed.Start(ctx, localfed.WithMemberNames(member), localfed.WithControllers())
	if err != nil {
		t.Fatalf("starting the federation: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping the federation: %v", err)
		}
	})
	kube, err := fed.Member(member).Client()
	if err != nil {
		t.Fatal(err)
	}
	populate(ctx, t, kube)

	cache := clustercache.New(clustercache.Options{QPS: 50, Burst: 100})
	connect(ctx, t, cache, fed.Member(member), kube)
	changes := make(chan string, 100)
	src := capacitysource.New(cache, capacitysource.Options{
		OnChange: func(cluster string) { changes <- cluster },
		Debounce: 100 * time.Millisecond,
	})
	t.Cleanup(func() { src.Forget(member) })

	if c := src.Capacity("member-2", namespace, nil); c != nil {
		t.Errorf("capacity of a cluster not connected = %v, want nil", c)
	}
	want := framework.Capacity{
		Free:      list("cpu", "5", "memory", "11Gi", "pods", "219"),
		QuotaFree: list("cpu", "7", "pods", "3"),
	}
	poll.Eventually(t, 20*time.Second, "the capacity once synced", poll.NoError(func(context.Context) error { return check(src.Capacity(member, namespace, nil), want) }))
	waitForChange(t, changes, "once synced")
	// For the workload that owns the pod, the room it holds is free.
	own := labels.SelectorFromSet(labels.Set{"app": "web"})
	if err := check(src.Capacity(member, namespace, own), framework.Capacity{
		Free:      list("cpu", "6", "memory", "12Gi", "pods", "220"),
		QuotaFree: list("cpu", "8", "pods", "4"),
	}); err != nil {
		t.Errorf("capacity for the pod's own workload: %v", err)
	}

	drain(changes)
	cordon(ctx, t, kube, "node-b")
	want.Free = list("cpu", "3", "memory", "7Gi", "pods", "109")
	poll.Eventually(t, 20*time.Second, "the capacity after the change", poll.NoError(func(context.Context) error { return check(src.Capacity(member, namespace, nil), want) }))
	waitForChange(t, changes, "after a node is cordoned")
	if err := check(src.Capacity(member, "other", nil), framework.Capacity{Free: want.Free}); err != nil {
		t.Errorf("namespace without quota: %v", err)
	}

	// New credentials rebuild the member's clients: new informers follow.
	connect(ctx, t, cache, fed.Member(member), kube)
	if err := kube.CoreV1().Pods(namespace).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	want.Free = list("cpu", "4", "memory", "8Gi", "pods", "110")
	poll.Eventually(t, 20*time.Second, "the capacity after the change", poll.NoError(func(context.Context) error { return check(src.Capacity(member, namespace, nil), want) }))
}

// populate creates the nodes, the pod and the quota.
func populate(ctx context.Context, t *testing.T, kube kubernetes.Interface) {
	t.Helper()
	createNode(ctx, t, kube, "node-a", corev1.ConditionTrue, list("cpu", "4", "memory", "8Gi", "pods", "110"))
	createNode(ctx, t, kube, "node-b", corev1.ConditionTrue, list("cpu", "2", "memory", "4Gi", "pods", "110"))
	createNode(ctx, t, kube, "node-c", corev1.ConditionFalse, list("cpu", "64", "memory", "256Gi", "pods", "110"))
	must(t, create(ctx, kube.CoreV1().Namespaces(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	must(t, create(ctx, kube.CoreV1().ServiceAccounts(namespace), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}))
	// The pod comes before the quota, so that quota admission leaves the
	// quota's usage to the test.
	must(t, create(ctx, kube.CoreV1().Pods(namespace), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{
			NodeName:   "node-a",
			Containers: []corev1.Container{{Name: "web", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: list("cpu", "1", "memory", "1Gi")}}},
		},
	}))
	hard := list("requests.cpu", "10", "pods", "5", "configmaps", "10")
	q, err := kube.CoreV1().ResourceQuotas(namespace).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}, metav1.CreateOptions{})
	must(t, err)
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: list("requests.cpu", "3", "pods", "2", "configmaps", "1")}
	_, err = kube.CoreV1().ResourceQuotas(namespace).UpdateStatus(ctx, q, metav1.UpdateOptions{})
	must(t, err)
}

func createNode(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string, ready corev1.ConditionStatus, allocatable corev1.ResourceList) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	must(t, err)
	n.Status.Capacity = allocatable
	n.Status.Allocatable = allocatable
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now(), Reason: "Test"}}
	_, err = kube.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	must(t, err)
}

func cordon(ctx context.Context, t *testing.T, kube kubernetes.Interface, name string) {
	t.Helper()
	n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	must(t, err)
	n.Spec.Unschedulable = true
	_, err = kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	must(t, err)
}

// connect puts into the cache a connection with a fresh token of a
// ServiceAccount that may only read nodes, pods and resourcequotas: what
// the host's credentials on a member must allow.
func connect(ctx context.Context, t *testing.T, cache *clustercache.Cache, c *localfed.Cluster, kube kubernetes.Interface) {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: reader, Namespace: "kube-system"}}
	must(t, create(ctx, kube.CoreV1().ServiceAccounts("kube-system"), sa))
	must(t, create(ctx, kube.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes", "pods", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}}},
	}))
	must(t, create(ctx, kube.RbacV1().ClusterRoleBindings(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: reader},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: reader, Namespace: "kube-system"}},
	}))
	tr, err := kube.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, reader, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	must(t, err)
	_, rebuilt, err := cache.Set(member, clustercache.Connection{Endpoint: c.Endpoint, CABundle: c.CAData, Token: tr.Status.Token})
	must(t, err)
	if !rebuilt {
		t.Fatal("a new token did not rebuild the member's clients")
	}
}

// create creates obj unless it exists.
func create[T any](ctx context.Context, c interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
}, obj T) error {
	_, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func check(got *framework.Capacity, want framework.Capacity) error {
	if got == nil {
		return fmt.Errorf("capacity not measured")
	}
	if !sameList(got.Free, want.Free) || !sameList(got.QuotaFree, want.QuotaFree) || (got.QuotaFree == nil) != (want.QuotaFree == nil) {
		return fmt.Errorf("capacity = free %v, quota %v; want free %v, quota %v", got.Free, got.QuotaFree, want.Free, want.QuotaFree)
	}
	return nil
}

func waitForChange(t *testing.T, changes <-chan string, when string) {
	t.Helper()
	select {
	case cluster := <-changes:
		if cluster != member {
			t.Errorf("OnChange(%q) %s, want %q", cluster, when, member)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no OnChange %s", when)
	}
}

// drain empties changes of the calls made so far.
func drain(changes <-chan string) {
	for {
		select {
		case <-changes:
		default:
			return
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func list(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

// sameList compares quantities by value, not by format.
func sameList(got, want corev1.ResourceList) bool {
	if len(got) != len(want) {
		return false
	}
	for name, q := range want {
		if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}
