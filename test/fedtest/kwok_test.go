package fedtest

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// TestKWOKRunsPods: in a member with KWOK, a Deployment whose Pods name the
// simulated Node gets every replica Running and Ready, as in a cluster with
// kubelets: the Deployment reports them available.
func TestKWOKRunsPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver and KWOK: run without -short")
	}
	ctx := t.Context()
	f, err := localfed.Start(ctx, localfed.WithMembers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Stop(); err != nil {
			t.Error(err)
		}
	})
	member := f.Member("member-1")
	kwok := RunKWOK(t, member)

	client, err := member.Client()
	if err != nil {
		t.Fatal(err)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, kwok.Node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && !strings.HasPrefix(a.Address, "127.") {
			t.Errorf("the KWOK Node's InternalIP is %s, want a loopback address", a.Address)
		}
	}

	const replicas = 3
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeName:   kwok.Node,
					Containers: []corev1.Container{{Name: "web", Image: "nginx:1.28"}},
				},
			},
		},
	}
	start := time.Now()
	if _, err := client.AppsV1().Deployments(deploy.Namespace).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Deployment → ReplicaSet → Pods is kube-controller-manager's work,
	// Pending → Running and Ready is KWOK's.
	var last *appsv1.Deployment
	deadline := time.Now().Add(2 * time.Minute)
	for {
		last, err = client.AppsV1().Deployments(deploy.Namespace).Get(ctx, deploy.Name, metav1.GetOptions{})
		if err == nil && last.Status.ReadyReplicas == replicas && last.Status.AvailableReplicas == replicas {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Deployment did not get %d ready replicas within 2 minutes: status %+v, error %v; KWOK's log: %s", replicas, statusOf(last), err, kwok.LogPath)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Logf("%d replicas ready %s after the Deployment was created", replicas, time.Since(start).Round(time.Millisecond))

	pods, err := client.CoreV1().Pods(deploy.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != replicas {
		t.Fatalf("%d Pods, want %d", len(pods.Items), replicas)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || !strings.HasPrefix(p.Status.PodIP, "127.") {
			t.Errorf("Pod %s: phase %s, IP %q; want Running with a loopback IP", p.Name, p.Status.Phase, p.Status.PodIP)
		}
	}

	// Deleting the Deployment deletes its Pods: KWOK plays their deletion
	// as a kubelet would.
	if err := client.AppsV1().Deployments(deploy.Namespace).Delete(ctx, deploy.Name, metav1.DeleteOptions{PropagationPolicy: new(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		pods, err := client.CoreV1().Pods(deploy.Namespace).List(waitCtx, metav1.ListOptions{LabelSelector: "app=web"})
		if err == nil && len(pods.Items) == 0 {
			break
		}
		select {
		case <-waitCtx.Done():
			t.Fatalf("the Pods of the deleted Deployment were not removed within 2 minutes (error %v)", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// statusOf is the status of d, or nil.
func statusOf(d *appsv1.Deployment) *appsv1.DeploymentStatus {
	if d == nil {
		return nil
	}
	return &d.Status
}

// TestKWOKTalksOnlyToLoopback: KWOK is started only against a kube-apiserver
// on a loopback address.
func TestKWOKTalksOnlyToLoopback(t *testing.T) {
	for _, tt := range []struct {
		endpoint string
		ok       bool
	}{
		{"https://127.0.0.1:6443", true},
		{"https://127.3.2.1:6443", true},
		{"https://[::1]:6443", true},
		{"https://localhost:6443", false},         // a name could resolve anywhere
		{"https://192.0.2.1:6443", false},         // loopback-check: not dialed
		{"https://kubernetes.default.svc", false}, // loopback-check: not dialed
		{"://bad", false},
	} {
		if err := requireLoopback(tt.endpoint); (err == nil) != tt.ok {
			t.Errorf("requireLoopback(%q) = %v, want ok=%v", tt.endpoint, err, tt.ok)
		}
	}
}
