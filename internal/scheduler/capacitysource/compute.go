package capacitysource

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// freeRoom is the allocatable room of the Ready, schedulable nodes minus
// the requests of the pods bound to them. It always holds cpu, memory and
// pods, so that a cluster without such nodes has room for nothing.
func freeRoom(nodes []*corev1.Node, pods []*corev1.Pod) corev1.ResourceList {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(0, resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(0, resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(0, resource.DecimalSI),
	}
	usable := map[string]bool{}
	for _, n := range nodes {
		if schedulable(n) {
			usable[n.Name] = true
			add(room, n.Status.Allocatable, 1)
		}
	}
	for _, p := range pods {
		if usable[p.Spec.NodeName] && !finished(p) {
			add(room, podRequests(p), -1)
		}
	}
	return room
}

// schedulable tells whether new pods may land on n: it is Ready and not
// cordoned.
func schedulable(n *corev1.Node) bool {
	if n.Spec.Unschedulable {
		return false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// finished tells whether p's containers have all stopped for good, freeing
// its room.
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podRequests is the room a pod holds on its node, as kube-scheduler counts
// it: per resource, the sum of its containers' requests or, when larger,
// that of an init container (with the sidecars started before it), plus
// the pod's overhead; pod-level requests replace the containers' for the
// resources they name. Every pod takes one of "pods".
func podRequests(p *corev1.Pod) corev1.ResourceList {
	reqs := corev1.ResourceList{}
	for _, c := range p.Spec.Containers {
		add(reqs, c.Resources.Requests, 1)
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(reqs, c.Resources.Requests, 1)
			add(sidecars, c.Resources.Requests, 1)
			maxOf(initMax, sidecars)
			continue
		}
		during := sidecars.DeepCopy()
		add(during, c.Resources.Requests, 1)
		maxOf(initMax, during)
	}
	maxOf(reqs, initMax)
	if p.Spec.Resources != nil {
		for name, q := range p.Spec.Resources.Requests {
			reqs[name] = q.DeepCopy()
		}
	}
	add(reqs, p.Spec.Overhead, 1)
	reqs[corev1.ResourcePods] = *resource.NewQuantity(1, resource.DecimalSI)
	return reqs
}

// add adds (sign 1) or subtracts (sign -1) every quantity of l to sum.
func add(sum, l corev1.ResourceList, sign int) {
	for name, q := range l {
		cur := sum[name]
		if sign < 0 {
			cur.Sub(q)
		} else {
			cur.Add(q)
		}
		sum[name] = cur
	}
}

// maxOf raises every quantity of m to that of l where l's is larger.
func maxOf(m, l corev1.ResourceList) {
	for name, q := range l {
		if cur, ok := m[name]; !ok || q.Cmp(cur) > 0 {
			m[name] = q.DeepCopy()
		}
	}
}

// quotaKeys maps the ResourceQuota keys that limit new pods to the
// resource a pod requests.
var quotaKeys = map[corev1.ResourceName]corev1.ResourceName{
	corev1.ResourceCPU:            corev1.ResourceCPU,
	corev1.ResourceRequestsCPU:    corev1.ResourceCPU,
	corev1.ResourceMemory:         corev1.ResourceMemory,
	corev1.ResourceRequestsMemory: corev1.ResourceMemory,
	corev1.ResourcePods:           corev1.ResourcePods,
	"count/pods":                  corev1.ResourcePods,
}

// quotaFree is what the quotas of one namespace leave, hard minus used,
// the tightest per resource; nil when none limits cpu, memory or pods.
// What is over-used stays negative.
func quotaFree(quotas []*corev1.ResourceQuota) corev1.ResourceList {
	var tightest corev1.ResourceList
	for _, q := range quotas {
		if !limitsEveryPod(q) {
			continue
		}
		hard := q.Status.Hard
		if len(hard) == 0 {
			hard = q.Spec.Hard
		}
		for key, h := range hard {
			name, ok := quotaKeys[key]
			if !ok {
				continue
			}
			left := h.DeepCopy()
			left.Sub(q.Status.Used[key])
			if cur, ok := tightest[name]; !ok || left.Cmp(cur) < 0 {
				if tightest == nil {
					tightest = corev1.ResourceList{}
				}
				tightest[name] = left
			}
		}
	}
	return tightest
}

// workloadScopes are the quota scopes that take in the pods of an ordinary
// workload (no activeDeadlineSeconds; requests set).
var workloadScopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort}

// limitsEveryPod tells whether q counts the pods of an ordinary workload:
// a quota scoped to priority classes, to terminating or best-effort pods,
// or to cross-namespace affinity, says nothing of the others.
func limitsEveryPod(q *corev1.ResourceQuota) bool {
	for _, s := range q.Spec.Scopes {
		if !slices.Contains(workloadScopes, s) {
			return false
		}
	}
	if q.Spec.ScopeSelector == nil {
		return true
	}
	for _, e := range q.Spec.ScopeSelector.MatchExpressions {
		if e.Operator != corev1.ScopeSelectorOpExists || !slices.Contains(workloadScopes, e.ScopeName) {
			return false
		}
	}
	return true
}

// trim keeps of a Node or Pod only what freeRoom reads, and drops the
// managedFields of anything else: the informers hold every Pod of the
// member. It is idempotent, as informer transforms must be.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return trimNode(o), nil
	case *corev1.Pod:
		return trimPod(o), nil
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

func trimMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

// trimNode keeps allocatable, unschedulable and the Ready condition's
// status, without its heartbeat times.
func trimNode(n *corev1.Node) *corev1.Node {
	out := &corev1.Node{
		ObjectMeta: trimMeta(n.ObjectMeta),
		Spec:       corev1.NodeSpec{Unschedulable: n.Spec.Unschedulable},
		Status:     corev1.NodeStatus{Allocatable: n.Status.Allocatable},
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out
}

// trimPod keeps the labels (to find a workload's own pods), the node, the
// phase and the requests.
func trimPod(p *corev1.Pod) *corev1.Pod {
	meta := trimMeta(p.ObjectMeta)
	meta.Labels = p.Labels
	out := &corev1.Pod{
		ObjectMeta: meta,
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName, Overhead: p.Spec.Overhead},
		Status:     corev1.PodStatus{Phase: p.Status.Phase},
	}
	if p.Spec.Resources != nil {
		out.Spec.Resources = &corev1.ResourceRequirements{Requests: p.Spec.Resources.Requests}
	}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, requestsOnly(c))
	}
	for _, c := range p.Spec.InitContainers {
		out.Spec.InitContainers = append(out.Spec.InitContainers, requestsOnly(c))
	}
	return out
}

func requestsOnly(c corev1.Container) corev1.Container {
	return corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy, Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
}

// sameContent tells whether an update of a trimmed Node, Pod or
// ResourceQuota left its spec and status as they were (only metadata, or
// what trim drops, changed).
func sameContent(a, b any) bool {
	switch x := a.(type) {
	case *corev1.Node:
		y, ok := b.(*corev1.Node)
		return ok && equality.Semantic.DeepEqual(x.Spec, y.Spec) && equality.Semantic.DeepEqual(x.Status, y.Status)
	case *corev1.Pod:
		y, ok := b.(*corev1.Pod)
		return ok && equality.Semantic.DeepEqual(x.Spec, y.Spec) && equality.Semantic.DeepEqual(x.Status, y.Status)
	case *corev1.ResourceQuota:
		y, ok := b.(*corev1.ResourceQuota)
		return ok && equality.Semantic.DeepEqual(x.Spec, y.Spec) && equality.Semantic.DeepEqual(x.Status, y.Status)
	}
	return false
}
