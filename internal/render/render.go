package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Target is the kind a federated resource is rendered as in members.
type Target struct {
	// Kind is the member copy's group, version and kind.
	Kind schema.GroupVersionKind
	// Namespaced tells whether member copies are namespaced.
	Namespaced bool
}

// Spec is the part of a Federated<Kind>'s spec that propagation reads,
// whatever the kind.
type Spec struct {
	Placement      typesv1beta1.Placement         `json:"placement"`
	Overrides      []typesv1beta1.ClusterOverride `json:"overrides,omitempty"`
	RetainReplicas bool                           `json:"retainReplicas,omitempty"`
	DriftPolicy    *typesv1beta1.DriftPolicy      `json:"driftPolicy,omitempty"`
	Rollout        *typesv1beta1.Rollout          `json:"rollout,omitempty"`
	// PropagateDependencies: the workload's dependencies go with it.
	PropagateDependencies bool `json:"propagateDependencies,omitempty"`
}

// ParseSpec reads placement, overrides, retainReplicas, the drift policy
// and the rollout from obj.
func ParseSpec(obj *unstructured.Unstructured) (Spec, error) {
	var f Spec
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		return f, fmt.Errorf("reading spec: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &f); err != nil {
		return f, fmt.Errorf("reading spec: %w", err)
	}
	return f, nil
}

// OverridesFor returns the overrides of cluster.
func (f Spec) OverridesFor(cluster string) []typesv1beta1.Override {
	for _, o := range f.Overrides {
		if string(o.ClusterName) == cluster {
			return o.ClusterOverrides
		}
	}
	return nil
}

// Template returns a copy of obj's spec.template, or an empty object.
func Template(obj *unstructured.Unstructured) map[string]any {
	t, found, err := unstructured.NestedMap(obj.Object, "spec", "template")
	if err != nil || !found || t == nil {
		return map[string]any{}
	}
	return t
}

// Desired returns the copy of fed that cluster should have: the template
// with the cluster's overrides applied and, when the scheduler divides
// them, its replicas (which win over both), labelled as managed. The
// version annotations a write adds are not in it.
func Desired(target Target, fed *unstructured.Unstructured, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	spec, err := ParseSpec(fed)
	if err != nil {
		return nil, err
	}
	return For(target, fed, spec, cluster, replicas)
}

// For is Desired for a spec already parsed.
func For(target Target, fed *unstructured.Unstructured, spec Spec, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	desired, err := WithOverrides(target, fed, spec.OverridesFor(cluster))
	if err != nil {
		return nil, err
	}
	if replicas != nil {
		if err := unstructured.SetNestedField(desired.Object, int64(*replicas), "spec", "replicas"); err != nil {
			return nil, fmt.Errorf("setting spec.replicas: %w", err)
		}
	}
	return desired, nil
}

// WithOverrides returns the member copy of fed for one cluster: the
// template with the cluster's overrides applied, of the target kind, named
// after fed and labelled as managed. Only labels and annotations of the
// template's metadata are kept.
func WithOverrides(target Target, fed *unstructured.Unstructured, overrides []typesv1beta1.Override) (*unstructured.Unstructured, error) {
	obj := Template(fed)
	meta, _, _ := unstructured.NestedMap(obj, "metadata")
	kept := map[string]any{}
	for _, k := range []string{"labels", "annotations"} {
		if v, ok := meta[k]; ok {
			kept[k] = v
		}
	}
	obj["metadata"] = kept
	delete(obj, "status")
	obj, err := applyOverrides(obj, overrides)
	if err != nil {
		return nil, err
	}
	obj = convertLegacyIngress(target, obj)
	out := &unstructured.Unstructured{Object: obj}
	out.SetAPIVersion(target.Kind.GroupVersion().String())
	out.SetKind(target.Kind.Kind)
	out.SetName(fed.GetName())
	if target.Namespaced {
		out.SetNamespace(fed.GetNamespace())
	} else {
		out.SetNamespace("")
	}
	labels := out.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[typesv1beta1.LabelManaged] = "true"
	out.SetLabels(labels)
	// Only Fedwarden marks a namespace it created, when it creates it: a
	// template or override that carried the mark would let an adopted
	// namespace, and what it holds, be deleted with the resource. Only a
	// write stamps a copy with the UID of the resource that wrote it: one
	// that carried another resource's UID would let that resource's
	// deletion delete the copy.
	if annotations := out.GetAnnotations(); annotations != nil {
		delete(annotations, typesv1beta1.AnnotationCreatedNamespace)
		delete(annotations, typesv1beta1.AnnotationOwnerUID)
		out.SetAnnotations(annotations)
	}
	return out, nil
}

// applyOverrides applies the overrides in order, each as a one-operation
// JSON Patch, so that an error names the override that failed.
func applyOverrides(obj map[string]any, overrides []typesv1beta1.Override) (map[string]any, error) {
	if len(overrides) == 0 {
		return obj, nil
	}
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding the template: %w", err)
	}
	for i, o := range overrides {
		op := o.Op
		if op == "" {
			op = "replace"
		}
		patchOp := map[string]any{"op": op, "path": o.Path}
		if op != "remove" {
			// Without a value the patch would write null, which the member
			// reads as "unset" and defaults: a silent change, not the intent.
			if o.Value == nil || len(o.Value.Raw) == 0 || string(o.Value.Raw) == "null" {
				return nil, fmt.Errorf("override %d (%s %s) has no value: %s needs one (to delete a field, use op: remove)", i, op, o.Path, op)
			}
			var value any
			if err := json.Unmarshal(o.Value.Raw, &value); err != nil {
				return nil, fmt.Errorf("override %d (%s %s): decoding the value: %w", i, op, o.Path, err)
			}
			patchOp["value"] = value
		}
		raw, err := json.Marshal([]any{patchOp})
		if err != nil {
			return nil, fmt.Errorf("override %d (%s %s): %w", i, op, o.Path, err)
		}
		patch, err := jsonpatch.DecodePatch(raw)
		if err != nil {
			return nil, fmt.Errorf("override %d (%s %s): %w", i, op, o.Path, err)
		}
		if doc, err = patch.Apply(doc); err != nil {
			return nil, fmt.Errorf("override %d (%s %s) does not apply to the template: %w", i, op, o.Path, err)
		}
	}
	out := map[string]any{}
	// Integers stay int64, as in objects read from an API server.
	if err := utiljson.Unmarshal(doc, &out); err != nil {
		return nil, fmt.Errorf("decoding the rendered object: %w", err)
	}
	return out, nil
}

// OverridesHash is the content hash behind the override version: the
// overrides, and the scheduler's per-cluster replicas when it divides them
// (KubeFed wrote those as overrides too).
func OverridesHash(overrides []typesv1beta1.ClusterOverride, replicas map[string]int32) string {
	if len(replicas) == 0 {
		return ContentHash(overrides)
	}
	return ContentHash(map[string]any{"overrides": overrides, "replicas": replicas})
}

// ContentHash is a stable hash of v's JSON encoding (map keys sorted).
func ContentHash(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Values here come from decoded JSON: they always encode.
		panic(fmt.Sprintf("encoding a decoded object: %v", err))
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}
