package scheduler

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

// workloadOf reads what the plugins need from the federated resource:
// spec.template.spec.replicas and the requests of the pod template at
// spec.template.spec.template (Deployments, ReplicaSets, StatefulSets…).
func workloadOf(in Input) *framework.Workload {
	fed := in.Federated
	w := &framework.Workload{
		Kind: fed.GetKind(), Namespace: fed.GetNamespace(), Name: fed.GetName(),
		Placement: in.Placement,
	}
	if in.Preference != nil {
		w.Preference = &in.Preference.Spec
	}
	if n, ok := replicasOf(fed); ok {
		w.Replicas = &n
	} else if hasReplicas(fed) {
		one := int32(1) // the API server's default
		w.Replicas = &one
	}
	w.SpreadChanged = spreadChanged(in)
	w.PodRequests = podRequests(fed)
	w.PodSelector = podSelector(fed)
	return w
}

// spreadChanged tells whether the placement's spread constraints differ
// from those the last decision was made under. Not recorded counts as
// unchanged: a missing or older CPV never lets a spread drop a copy.
func spreadChanged(in Input) bool {
	if in.Spread == nil {
		return false
	}
	return !equality.Semantic.DeepEqual(in.Spread.Constraints, in.Placement.SpreadConstraints)
}

// podSelector reads the template's spec.selector; nil when it has none or
// it is not valid (the member's API server says so when it is written).
func podSelector(fed *unstructured.Unstructured) labels.Selector {
	raw, found, err := unstructured.NestedMap(fed.Object, "spec", "template", "spec", "selector")
	if err != nil || !found {
		return nil
	}
	var ls metav1.LabelSelector
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls); err != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	if err != nil || sel.Empty() {
		return nil
	}
	return sel
}

// replicasOf reads spec.template.spec.replicas, an integer however it was
// decoded.
func replicasOf(fed *unstructured.Unstructured) (int32, bool) {
	v, found, err := unstructured.NestedFieldNoCopy(fed.Object, "spec", "template", "spec", "replicas")
	if err != nil || !found {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return int32(n), true
	case float64:
		return int32(n), true
	}
	return 0, false
}

// hasReplicas tells whether the template is a workload with a pod template
// (its replicas default to 1 when unset).
func hasReplicas(fed *unstructured.Unstructured) bool {
	_, found, _ := unstructured.NestedMap(fed.Object, "spec", "template", "spec", "template")
	return found
}

// podRequests sums the requests of the pod template's containers; an init
// container runs alone, so it counts when it asks for more.
func podRequests(fed *unstructured.Unstructured) corev1.ResourceList {
	raw, found, err := unstructured.NestedMap(fed.Object, "spec", "template", "spec", "template", "spec")
	if err != nil || !found {
		return nil
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &spec); err != nil {
		return nil
	}
	total := corev1.ResourceList{}
	for _, c := range spec.Containers {
		for name, q := range c.Resources.Requests {
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	for _, c := range spec.InitContainers {
		for name, q := range c.Resources.Requests {
			if cur, ok := total[name]; !ok || q.Cmp(cur) > 0 {
				total[name] = q.DeepCopy()
			}
		}
	}
	for name, q := range spec.Overhead {
		sum := total[name]
		sum.Add(q)
		total[name] = sum
	}
	return total
}
