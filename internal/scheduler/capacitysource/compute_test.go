package capacitysource

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// list builds a ResourceList from name, quantity pairs.
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
		g, ok := got[name]
		if !ok || g.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

func node(name string, ready corev1.ConditionStatus, allocatable ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: list(allocatable...)}}
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, LastHeartbeatTime: metav1.Now()},
		}
	}
	return n
}

func container(requests ...string) corev1.Container {
	return corev1.Container{Name: "c", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: list(requests...)}}
}

func sidecar(requests ...string) corev1.Container {
	c := container(requests...)
	c.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	return c
}

func pod(nodeName string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: containers},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestPodRequests(t *testing.T) {
	t.Parallel()
	withInit := func(p *corev1.Pod, init ...corev1.Container) *corev1.Pod {
		p.Spec.InitContainers = init
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want corev1.ResourceList
	}{
		{"no requests", pod("n"), list("pods", "1")},
		{"containers add up", pod("n", container("cpu", "250m", "memory", "64Mi"), container("cpu", "750m")),
			list("cpu", "1", "memory", "64Mi", "pods", "1")},
		{"a larger init container wins, per resource", withInit(pod("n", container("cpu", "1", "memory", "1Gi")), container("cpu", "2", "memory", "10Mi")),
			list("cpu", "2", "memory", "1Gi", "pods", "1")},
		{"init containers do not add up", withInit(pod("n", container("cpu", "1")), container("cpu", "1500m"), container("cpu", "1500m")),
			list("cpu", "1500m", "pods", "1")},
		{"sidecars run alongside", withInit(pod("n", container("cpu", "1")), sidecar("cpu", "500m"), container("cpu", "2")),
			list("cpu", "2500m", "pods", "1")},
		{"overhead", func() *corev1.Pod {
			p := pod("n", container("cpu", "1"))
			p.Spec.Overhead = list("cpu", "100m", "memory", "32Mi")
			return p
		}(), list("cpu", "1100m", "memory", "32Mi", "pods", "1")},
		{"pod-level requests", func() *corev1.Pod {
			p := pod("n", container("cpu", "1", "memory", "1Gi"))
			p.Spec.Resources = &corev1.ResourceRequirements{Requests: list("cpu", "3")}
			return p
		}(), list("cpu", "3", "memory", "1Gi", "pods", "1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := podRequests(tt.pod); !sameList(got, tt.want) {
				t.Errorf("podRequests = %v, want %v", got, tt.want)
			}
			if got := podRequests(trimPod(tt.pod)); !sameList(got, tt.want) {
				t.Errorf("podRequests of the trimmed pod = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFreeRoom(t *testing.T) {
	t.Parallel()
	a := node("a", corev1.ConditionTrue, "cpu", "4", "memory", "8Gi", "pods", "110", "nvidia.com/gpu", "1")
	b := node("b", corev1.ConditionTrue, "cpu", "2", "memory", "4Gi", "pods", "110")
	cordoned := node("c", corev1.ConditionTrue, "cpu", "16", "memory", "64Gi", "pods", "110")
	cordoned.Spec.Unschedulable = true
	notReady := node("d", corev1.ConditionFalse, "cpu", "16", "memory", "64Gi", "pods", "110")
	unknown := node("e", "", "cpu", "16", "memory", "64Gi", "pods", "110")
	succeeded := pod("a", container("cpu", "4"))
	succeeded.Status.Phase = corev1.PodSucceeded
	tests := []struct {
		name  string
		nodes []*corev1.Node
		pods  []*corev1.Pod
		want  corev1.ResourceList
	}{
		{"no nodes", nil, nil, list("cpu", "0", "memory", "0", "pods", "0")},
		{"ready nodes add up", []*corev1.Node{a, b}, nil,
			list("cpu", "6", "memory", "12Gi", "pods", "220", "nvidia.com/gpu", "1")},
		{"cordoned, not ready or silent nodes do not count", []*corev1.Node{b, cordoned, notReady, unknown}, nil,
			list("cpu", "2", "memory", "4Gi", "pods", "110")},
		{"bound pods take their room", []*corev1.Node{a, b},
			[]*corev1.Pod{pod("a", container("cpu", "1500m", "memory", "1Gi")), pod("b", container("cpu", "500m"))},
			list("cpu", "4", "memory", "11Gi", "pods", "218", "nvidia.com/gpu", "1")},
		{"pods of nodes not counted, and finished pods, do not", []*corev1.Node{b},
			[]*corev1.Pod{pod("c", container("cpu", "8")), pod("", container("cpu", "8")), succeeded},
			list("cpu", "2", "memory", "4Gi", "pods", "110")},
		{"overcommitted goes negative", []*corev1.Node{b}, []*corev1.Pod{pod("b", container("cpu", "3"))},
			list("cpu", "-1", "memory", "4Gi", "pods", "109")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := freeRoom(tt.nodes, tt.pods); !sameList(got, tt.want) {
				t.Errorf("freeRoom = %v, want %v", got, tt.want)
			}
		})
	}
}

func quota(spec, status, used corev1.ResourceList, scopes ...corev1.ResourceQuotaScope) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: "ns"},
		Spec:       corev1.ResourceQuotaSpec{Hard: spec, Scopes: scopes},
		Status:     corev1.ResourceQuotaStatus{Hard: status, Used: used},
	}
}

func TestQuotaFree(t *testing.T) {
	t.Parallel()
	priority := quota(list("pods", "0"), nil, nil)
	priority.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}},
	}}
	notTerminating := quota(list("pods", "0"), nil, nil)
	notTerminating.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
		{ScopeName: corev1.ResourceQuotaScopeNotTerminating, Operator: corev1.ScopeSelectorOpExists},
	}}
	tests := []struct {
		name   string
		quotas []*corev1.ResourceQuota
		want   corev1.ResourceList
	}{
		{"no quota", nil, nil},
		{"nothing a pod requests", []*corev1.ResourceQuota{quota(list("configmaps", "10", "limits.cpu", "4"), nil, nil)}, nil},
		{"status hard minus used",
			[]*corev1.ResourceQuota{quota(list("requests.cpu", "100"), list("requests.cpu", "10", "requests.memory", "8Gi", "count/pods", "20"), list("requests.cpu", "4", "requests.memory", "1Gi", "count/pods", "5"))},
			list("cpu", "6", "memory", "7Gi", "pods", "15")},
		{"spec hard before the status is written",
			[]*corev1.ResourceQuota{quota(list("cpu", "4", "memory", "2Gi", "pods", "10"), nil, nil)},
			list("cpu", "4", "memory", "2Gi", "pods", "10")},
		{"the tightest across quotas and keys", []*corev1.ResourceQuota{
			quota(nil, list("cpu", "8", "requests.cpu", "6"), list("cpu", "1", "requests.cpu", "1")),
			quota(nil, list("requests.cpu", "4", "pods", "10"), list("requests.cpu", "2", "pods", "1")),
		}, list("cpu", "2", "pods", "9")},
		{"over-used stays negative", []*corev1.ResourceQuota{quota(nil, list("pods", "2"), list("pods", "3"))}, list("pods", "-1")},
		{"scoped to some pods", []*corev1.ResourceQuota{
			priority,
			quota(list("pods", "0"), nil, nil, corev1.ResourceQuotaScopeBestEffort),
			quota(list("pods", "0"), nil, nil, corev1.ResourceQuotaScopeTerminating),
		}, nil},
		{"scoped to every workload pod", []*corev1.ResourceQuota{
			notTerminating,
			quota(list("cpu", "1"), nil, nil, corev1.ResourceQuotaScopeNotBestEffort),
		}, list("cpu", "1", "pods", "0")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := quotaFree(tt.quotas)
			if (got == nil) != (tt.want == nil) || !sameList(got, tt.want) {
				t.Errorf("quotaFree = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTrim(t *testing.T) {
	t.Parallel()
	n := node("a", corev1.ConditionTrue, "cpu", "4")
	n.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	n.Status.Images = []corev1.ContainerImage{{Names: []string{"nginx"}, SizeBytes: 1 << 20}}
	q := quota(list("pods", "1"), nil, nil)
	q.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	for _, obj := range []any{n, pod("a", container("cpu", "1")), q} {
		once, err := trim(obj)
		if err != nil {
			t.Fatal(err)
		}
		twice, _ := trim(once)
		if !equality.Semantic.DeepEqual(once, twice) {
			t.Errorf("trim is not idempotent: %v, then %v", once, twice)
		}
		m := once.(metav1.Object)
		// A pod keeps its labels: they tell a workload's own pods.
		_, isPod := once.(*corev1.Pod)
		if len(m.GetManagedFields()) > 0 || (!isPod && len(m.GetLabels()) > 0) {
			t.Errorf("trim kept metadata: %v", once)
		}
		if p, ok := once.(*corev1.Pod); ok && p.Labels["app"] != "a" {
			t.Errorf("trim dropped a pod's labels: %v", p.Labels)
		}
	}
	if got, _ := trim(n); len(got.(*corev1.Node).Status.Images) > 0 || !schedulable(got.(*corev1.Node)) {
		t.Errorf("trimmed node = %v, want no images, still Ready", got)
	}
}

func TestSameContent(t *testing.T) {
	t.Parallel()
	beat := func(n *corev1.Node) *corev1.Node {
		n = n.DeepCopy()
		n.ResourceVersion = "2"
		n.Status.Conditions[1].LastHeartbeatTime = metav1.NewTime(n.Status.Conditions[1].LastHeartbeatTime.Add(10e9))
		return n
	}
	n := node("a", corev1.ConditionTrue, "cpu", "4")
	cordoned := n.DeepCopy()
	cordoned.Spec.Unschedulable = true
	running, pending := pod("a", container("cpu", "1")), pod("a", container("cpu", "1"))
	pending.Status.Phase = corev1.PodPending
	tests := []struct {
		name     string
		old, cur any
		want     bool
	}{
		{"a heartbeat", trimNode(n), trimNode(beat(n)), true},
		{"a cordon", trimNode(n), trimNode(cordoned), false},
		{"a pod starts", trimPod(pending), trimPod(running), false},
		{"a quota's usage", quota(nil, list("pods", "2"), list("pods", "1")), quota(nil, list("pods", "2"), list("pods", "2")), false},
		{"kinds differ", trimNode(n), trimPod(running), false},
	}
	for _, tt := range tests {
		if got := sameContent(tt.old, tt.cur); got != tt.want {
			t.Errorf("%s: sameContent = %v, want %v", tt.name, got, tt.want)
		}
	}
}
