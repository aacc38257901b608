package propagation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// federated is the part of a Federated<Kind>'s spec that propagation reads,
// whatever the kind.
type federated struct {
	Placement      typesv1beta1.Placement         `json:"placement"`
	Overrides      []typesv1beta1.ClusterOverride `json:"overrides,omitempty"`
	RetainReplicas bool                           `json:"retainReplicas,omitempty"`
	DriftPolicy    *typesv1beta1.DriftPolicy      `json:"driftPolicy,omitempty"`
}

// parseSpec reads placement, overrides, retainReplicas and the drift
// policy from obj.
func parseSpec(obj *unstructured.Unstructured) (federated, error) {
	var f federated
	spec, _, err := unstructured.NestedMap(obj.Object, "spec")
	if err != nil {
		return f, fmt.Errorf("reading spec: %w", err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &f); err != nil {
		return f, fmt.Errorf("reading spec: %w", err)
	}
	return f, nil
}

// overridesFor returns the overrides of cluster.
func (f federated) overridesFor(cluster string) []typesv1beta1.Override {
	for _, o := range f.Overrides {
		if string(o.ClusterName) == cluster {
			return o.ClusterOverrides
		}
	}
	return nil
}

// template returns a copy of obj's spec.template, or an empty object.
func template(obj *unstructured.Unstructured) map[string]any {
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
func Desired(typ Type, fed *unstructured.Unstructured, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	spec, err := parseSpec(fed)
	if err != nil {
		return nil, err
	}
	return renderFor(typ, fed, spec, cluster, replicas)
}

// renderFor is Desired for a spec already parsed.
func renderFor(typ Type, fed *unstructured.Unstructured, spec federated, cluster string, replicas *int32) (*unstructured.Unstructured, error) {
	desired, err := render(typ, fed, spec.overridesFor(cluster))
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

// render returns the member copy of fed for one cluster: the template with
// the cluster's overrides applied, of the target kind, named after fed and
// labelled as managed. Only labels and annotations of the template's
// metadata are kept.
func render(typ Type, fed *unstructured.Unstructured, overrides []typesv1beta1.Override) (*unstructured.Unstructured, error) {
	obj := template(fed)
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
	obj = convertLegacyIngress(typ, obj)
	out := &unstructured.Unstructured{Object: obj}
	out.SetAPIVersion(typ.Target.GroupVersion().String())
	out.SetKind(typ.Target.Kind)
	out.SetName(fed.GetName())
	if typ.TargetNamespaced {
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
	// namespace, and what it holds, be deleted with the resource.
	if annotations := out.GetAnnotations(); annotations != nil {
		delete(annotations, typesv1beta1.AnnotationCreatedNamespace)
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

// overridesHash is the content hash behind the override version: the
// overrides, and the scheduler's per-cluster replicas when it divides them
// (KubeFed wrote those as overrides too).
func overridesHash(overrides []typesv1beta1.ClusterOverride, replicas map[string]int32) string {
	if len(replicas) == 0 {
		return contentHash(overrides)
	}
	return contentHash(map[string]any{"overrides": overrides, "replicas": replicas})
}

// contentHash is a stable hash of v's JSON encoding (map keys sorted).
func contentHash(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		// Values here come from decoded JSON: they always encode.
		panic(fmt.Sprintf("encoding a decoded object: %v", err))
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:16])
}
