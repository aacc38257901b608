package federate

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// droppedAnnotations are the annotations that a server or kubectl sets,
// which a template leaves out.
var droppedAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
}

// jobSelectorLabels are the labels the Job controller adds to a Job's
// selector and pod template when it generates the selector.
var jobSelectorLabels = []string{"controller-uid", "job-name", "batch.kubernetes.io/controller-uid", "batch.kubernetes.io/job-name"}

// serverSetFields removes, for some kinds, spec fields that the host's
// API server or controllers set and that would not be valid in a member.
var serverSetFields = map[schema.GroupKind]func(obj map[string]any){
	{Kind: "Service"}:             dropClusterIPs,
	{Group: "batch", Kind: "Job"}: dropGeneratedJobSelector,
}

// federatedResource is what federate builds a Federated<Kind> from.
type federatedResource struct {
	// gvk is the Federated<Kind>'s.
	gvk schema.GroupVersionKind
	// name and namespace are the Federated<Kind>'s.
	name, namespace string
	// object is the host object federated.
	object *unstructured.Unstructured
	// placement is spec.placement.
	placement map[string]any
}

// build returns the Federated<Kind> of r: its template is the object
// without status, kind, apiVersion and the metadata the server sets.
func (r federatedResource) build() *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"template": template(r.object), "placement": r.placement},
	}}
	u.SetGroupVersionKind(r.gvk)
	u.SetName(r.name)
	u.SetNamespace(r.namespace)
	return u
}

// template returns obj as a template: without apiVersion, kind and status,
// its metadata reduced to labels and annotations (those that a server or
// kubectl sets left out), and without the spec fields serverSetFields names.
func template(obj *unstructured.Unstructured) map[string]any {
	t := obj.DeepCopy().Object
	delete(t, "apiVersion")
	delete(t, "kind")
	delete(t, "status")
	meta := map[string]any{}
	if labels := obj.GetLabels(); len(labels) > 0 {
		meta["labels"] = toAny(labels)
	}
	annotations := obj.GetAnnotations()
	for _, a := range droppedAnnotations {
		delete(annotations, a)
	}
	if len(annotations) > 0 {
		meta["annotations"] = toAny(annotations)
	}
	delete(t, "metadata")
	if len(meta) > 0 {
		t["metadata"] = meta
	}
	if drop, ok := serverSetFields[obj.GroupVersionKind().GroupKind()]; ok {
		drop(t)
	}
	return t
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// dropClusterIPs removes the cluster IPs the host allocated to a Service,
// which each member allocates from its own range. A headless Service keeps
// clusterIP None.
func dropClusterIPs(obj map[string]any) {
	if ip, _, _ := unstructured.NestedString(obj, "spec", "clusterIP"); ip == "None" {
		return
	}
	unstructured.RemoveNestedField(obj, "spec", "clusterIP")
	unstructured.RemoveNestedField(obj, "spec", "clusterIPs")
}

// dropGeneratedJobSelector removes the selector that the Job controller
// generated (unless spec.manualSelector is true), and its labels on the pod
// template: a member refuses a Job that sets them.
func dropGeneratedJobSelector(obj map[string]any) {
	if manual, _, _ := unstructured.NestedBool(obj, "spec", "manualSelector"); manual {
		return
	}
	unstructured.RemoveNestedField(obj, "spec", "selector")
	labels, found, _ := unstructured.NestedStringMap(obj, "spec", "template", "metadata", "labels")
	if !found {
		return
	}
	for k := range labels {
		if slices.Contains(jobSelectorLabels, k) {
			delete(labels, k)
		}
	}
	if len(labels) == 0 {
		unstructured.RemoveNestedField(obj, "spec", "template", "metadata", "labels")
		return
	}
	_ = unstructured.SetNestedStringMap(obj, labels, "spec", "template", "metadata", "labels")
}

// newPlacement returns the spec.placement the flags ask for: the clusters
// named, the clusters whose labels match, or every cluster (an empty
// selector).
func newPlacement(clusters []string, selector map[string]string, all bool) map[string]any {
	switch {
	case len(clusters) > 0:
		list := make([]any, 0, len(clusters))
		for _, c := range clusters {
			list = append(list, map[string]any{"name": c})
		}
		return map[string]any{"clusters": list}
	case len(selector) > 0:
		return map[string]any{"clusterSelector": map[string]any{"matchLabels": toAny(selector)}}
	case all:
		return map[string]any{"clusterSelector": map[string]any{}}
	default:
		return map[string]any{}
	}
}
