package dependencies

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Owner is what one workload asks of a dependency: the clusters it is
// placed on, and the options it passes on.
type Owner struct {
	Clusters []string `json:"clusters"`
	// Remediation is the workload's drift remediation, when it sets one.
	Remediation typesv1beta1.Remediation `json:"remediation,omitempty"`
	// Adopt: the workload lets its copies take over unmanaged objects.
	Adopt bool `json:"adopt,omitempty"`
	// Orphan: the workload keeps its copies when it is deleted.
	Orphan bool `json:"orphan,omitempty"`
}

// Owners are a derived resource's owners, by OwnerKey.
type Owners map[string]Owner

// OwnerKey names a workload among a dependency's owners: its federated
// kind and group, and its name (it lives in the dependency's namespace).
func OwnerKey(federated schema.GroupVersionKind, name string) string {
	return federated.Kind + "." + federated.Group + "/" + name
}

// OwnerName is how a CPV's spec.dependencyOf names an owner: Kind/name,
// in the dependency's namespace.
func OwnerName(kind, name string) string { return kind + "/" + name }

// ParseOwnerName reads an OwnerName.
func ParseOwnerName(s string) (kind, name string) {
	kind, name, _ = strings.Cut(s, "/")
	return kind, name
}

// Names are the owners as OwnerNames, sorted, each once: how a CPV lists
// them (spec.dependencyOf).
func (o Owners) Names() []string {
	var names []string
	for key := range o {
		kindGroup, name, _ := strings.Cut(key, "/")
		kind, _, _ := strings.Cut(kindGroup, ".")
		names = append(names, OwnerName(kind, name))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// OwnersOf reads the owners of a derived resource; none when it has none.
func OwnersOf(obj *unstructured.Unstructured) (Owners, error) {
	raw := obj.GetAnnotations()[typesv1beta1.AnnotationDependencyOf]
	if raw == "" {
		return Owners{}, nil
	}
	owners := Owners{}
	if err := json.Unmarshal([]byte(raw), &owners); err != nil {
		return nil, fmt.Errorf("reading annotation %s of %s %s/%s: %w", typesv1beta1.AnnotationDependencyOf, obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
	}
	return owners, nil
}

// IsDerived tells whether obj is a federated resource Fedwarden derived
// from a dependency, and so may write and remove.
func IsDerived(obj *unstructured.Unstructured) bool {
	return obj.GetLabels()[typesv1beta1.LabelDependency] == "true"
}

// clusters is the union of the owners' clusters, sorted.
func (o Owners) clusters() []string {
	var all []string
	for _, owner := range o {
		all = append(all, owner.Clusters...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// remediation is the strictest the owners ask for: Enforce if one does,
// else Alert if one does, else none (the default).
func (o Owners) remediation() typesv1beta1.Remediation {
	var r typesv1beta1.Remediation
	for _, owner := range o {
		switch owner.Remediation {
		case typesv1beta1.RemediationEnforce:
			return owner.Remediation
		case typesv1beta1.RemediationAlert:
			r = owner.Remediation
		}
	}
	return r
}

func (o Owners) any(f func(Owner) bool) bool {
	for _, owner := range o {
		if f(owner) {
			return true
		}
	}
	return false
}

// Derive returns the derived resource of kind federated for host, the
// host object, owned by owners: template copied from host (see
// Template), placement the owners' clusters. existing, when not nil, is
// the derived resource as it is: its other labels and annotations are
// kept. The template of a host object that is gone (host nil) is kept
// from existing.
func Derive(federated schema.GroupVersionKind, namespace, name string, host, existing *unstructured.Unstructured, owners Owners) (*unstructured.Unstructured, error) {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	if existing != nil {
		out = existing.DeepCopy()
	}
	out.SetGroupVersionKind(federated)
	out.SetNamespace(namespace)
	out.SetName(name)
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[typesv1beta1.LabelDependency] = "true"
	out.SetLabels(labels)
	raw, err := json.Marshal(owners)
	if err != nil {
		return nil, fmt.Errorf("encoding the owners: %w", err)
	}
	annotations := out.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[typesv1beta1.AnnotationDependencyOf] = string(raw)
	setOrDrop(annotations, typesv1beta1.AnnotationConflictResolution, typesv1beta1.ConflictResolutionAdopt, owners.any(func(o Owner) bool { return o.Adopt }))
	setOrDrop(annotations, typesv1beta1.AnnotationOrphan, "true", owners.any(func(o Owner) bool { return o.Orphan }))
	if host != nil {
		annotations[typesv1beta1.AnnotationDependencySource] = host.GetResourceVersion()
	}
	out.SetAnnotations(annotations)

	spec, _, _ := unstructured.NestedMap(out.Object, "spec")
	if spec == nil {
		spec = map[string]any{}
	}
	if host != nil {
		spec["template"] = Template(host)
	}
	var placed []any
	for _, c := range owners.clusters() {
		placed = append(placed, map[string]any{"name": c})
	}
	spec["placement"] = map[string]any{"clusters": placed}
	if placed == nil {
		spec["placement"] = map[string]any{"clusters": []any{}}
	}
	delete(spec, "driftPolicy")
	if r := owners.remediation(); r != "" {
		spec["driftPolicy"] = map[string]any{"remediation": string(r)}
	}
	out.Object["spec"] = spec
	delete(out.Object, "status")
	return out, nil
}

func setOrDrop(m map[string]string, key, value string, set bool) {
	if set {
		m[key] = value
	} else {
		delete(m, key)
	}
}

// hostOnly are, by kind, the fields a host object's API server or its
// controllers set that do not belong in a copy: a claim's bound volume,
// a ServiceAccount's legacy token Secrets.
var hostOnly = map[string][][]string{
	PersistentVolumeClaim: {{"spec", "volumeName"}},
	ServiceAccount:        {{"secrets"}},
}

// hostAnnotations are annotations of a host object that its API server or
// controllers set, kept out of the template by prefix.
var hostAnnotations = []string{
	"kubectl.kubernetes.io/last-applied-configuration",
	"pv.kubernetes.io/",
	"volume.kubernetes.io/",
	"volume.beta.kubernetes.io/",
	"kubernetes.io/service-account.",
}

// Template is the template of the derived resource of host: the object
// without its kind, status and server-set metadata, keeping its labels
// and the annotations its owner wrote.
func Template(host *unstructured.Unstructured) map[string]any {
	t := map[string]any{}
	for k, v := range host.DeepCopy().Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			t[k] = v
		}
	}
	for _, path := range hostOnly[host.GetKind()] {
		unstructured.RemoveNestedField(t, path...)
	}
	meta := map[string]any{}
	if labels := host.GetLabels(); len(labels) > 0 {
		meta["labels"] = anyMap(labels)
	}
	annotations := maps.Clone(host.GetAnnotations())
	maps.DeleteFunc(annotations, func(k, _ string) bool {
		return slices.ContainsFunc(hostAnnotations, func(p string) bool { return strings.HasPrefix(k, p) })
	})
	if len(annotations) > 0 {
		meta["annotations"] = anyMap(annotations)
	}
	if len(meta) > 0 {
		t["metadata"] = meta
	}
	return t
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
