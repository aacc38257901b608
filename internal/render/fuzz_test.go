package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// The fuzz targets below run their seeds with every go test; make fuzz
// explores from them (see docs/testing.md).

// kubefedSamples are KubeFed's sample1 federated resources, the real shapes
// the seeds start from.
func kubefedSamples(f *testing.F) []*unstructured.Unstructured {
	f.Helper()
	files, err := filepath.Glob("../../test/conformance/kubefed-v0.10.0/sample1/federated*.yaml")
	if err != nil || len(files) == 0 {
		f.Fatalf("no KubeFed samples: %v", err)
	}
	var out []*unstructured.Unstructured
	for _, file := range files {
		out = append(out, decodeFile(f, file))
	}
	return out
}

func decodeFile(f *testing.F, file string) *unstructured.Unstructured {
	f.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		f.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		f.Fatalf("%s: %v", file, err)
	}
	return u
}

func mustJSON(f *testing.F, v any) []byte {
	f.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		f.Fatal(err)
	}
	return raw
}

// FuzzRender: for any template and overrides the CRD admits, the override
// renderer never panics, renders the same input the same way, leaves the
// federated resource alone, and what it renders is a JSON object of the
// target kind, named after the federated resource, in its namespace,
// labelled as managed.
func FuzzRender(f *testing.F) {
	for _, fed := range kubefedSamples(f) {
		spec, err := ParseSpec(fed)
		if err != nil {
			f.Fatal(err)
		}
		tmpl := mustJSON(f, Template(fed))
		f.Add(tmpl, []byte("[]"), fed.GetKind() == "FederatedIngress")
		for _, o := range spec.Overrides {
			f.Add(tmpl, mustJSON(f, o.ClusterOverrides), fed.GetKind() == "FederatedIngress")
		}
	}
	f.Add([]byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"replicas":1}}`), []byte(`[{"op":"add","path":"/metadata/labels/c","value":"d"},{"op":"remove","path":"/spec"}]`), false)
	f.Fuzz(func(t *testing.T, templateJSON, overridesJSON []byte, ingress bool) {
		tmpl := map[string]any{}
		if err := utiljson.Unmarshal(templateJSON, &tmpl); err != nil || tmpl == nil {
			return
		}
		var overrides []typesv1beta1.Override
		if err := json.Unmarshal(overridesJSON, &overrides); err != nil {
			return
		}
		if slices.ContainsFunc(overrides, func(o typesv1beta1.Override) bool { return !admitted(o) }) {
			return
		}
		typ, federatedKind := deployments, "FederatedDeployment"
		if ingress {
			typ, federatedKind = ingresses, "FederatedIngress"
		}
		fed := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "types.kubefed.io/v1beta1", "kind": federatedKind,
			"metadata": map[string]any{"name": "web", "namespace": "ns"},
			"spec":     map[string]any{"template": tmpl},
		}}
		before := fed.DeepCopy()
		got, err := WithOverrides(typ, fed, overrides)
		again, errAgain := WithOverrides(typ, fed, overrides)
		if !equality.Semantic.DeepEqual(fed.Object, before.Object) {
			t.Fatalf("render changed the federated resource:\n%v\nto\n%v", before.Object, fed.Object)
		}
		if (err == nil) != (errAgain == nil) || err != nil && err.Error() != errAgain.Error() {
			t.Fatalf("two renders disagree: %v, then %v", err, errAgain)
		}
		if err != nil {
			return
		}
		if !equality.Semantic.DeepEqual(got.Object, again.Object) {
			t.Fatalf("two renders differ:\n%v\n%v", got.Object, again.Object)
		}
		raw, err := json.Marshal(got.Object)
		if err != nil {
			t.Fatalf("the rendered object does not encode: %v", err)
		}
		decoded := map[string]any{}
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatalf("the rendered object is not a JSON object: %v: %s", err, raw)
		}
		if _, ok := got.Object["metadata"].(map[string]any); !ok {
			t.Fatalf("the rendered metadata is %T, not an object: %s", got.Object["metadata"], raw)
		}
		if got.GetAPIVersion() != typ.Kind.GroupVersion().String() || got.GetKind() != typ.Kind.Kind ||
			got.GetName() != "web" || got.GetNamespace() != "ns" || got.GetLabels()[typesv1beta1.LabelManaged] != "true" {
			t.Fatalf("the rendered object lost its identity: %s", raw)
		}
	})
}

// overridePath is the CRD's pattern for an override's path.
var overridePath = regexp.MustCompile(`^(/([^~]|~[01])*)+$`)

// admitted tells whether the CRD's validation lets o in: its op, the
// pattern and length of its path, and the paths its rules forbid.
func admitted(o typesv1beta1.Override) bool {
	if !slices.Contains([]typesv1beta1.OverrideOp{"", "add", "replace", "remove"}, o.Op) ||
		len(o.Path) < 2 || len(o.Path) > 256 || !overridePath.MatchString(o.Path) {
		return false
	}
	if slices.Contains([]string{"/metadata", "/kind", "/apiVersion", "/status"}, o.Path) || strings.HasPrefix(o.Path, "/status/") {
		return false
	}
	for _, p := range []string{"name", "namespace", "generateName", "uid", "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"} {
		if p = "/metadata/" + p; o.Path == p || strings.HasPrefix(o.Path, p+"/") {
			return false
		}
	}
	return true
}

// FuzzVersions: the template and override hashes do not depend on how the
// federated resource was encoded (key order, spacing), and any change of
// the template, the overrides or the divided replicas changes them, which
// moves the version by one.
func FuzzVersions(f *testing.F) {
	for i, fed := range kubefedSamples(f) {
		raw, err := fed.MarshalJSON()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, uint(i), int32(i-1))
	}
	f.Fuzz(func(t *testing.T, fedJSON []byte, pick uint, replicas int32) {
		fed := &unstructured.Unstructured{}
		if err := fed.UnmarshalJSON(fedJSON); err != nil {
			return
		}
		spec, err := ParseSpec(fed)
		if err != nil {
			return
		}
		var divided map[string]int32
		if replicas >= 0 {
			divided = map[string]int32{"cluster1": replicas, "cluster2": replicas / 2}
		}
		tHash, oHash := ContentHash(Template(fed)), OverridesHash(spec.Overrides, divided)

		// The same resource, encoded with every object's keys in reverse
		// order and other spacing.
		same := &unstructured.Unstructured{}
		if err := same.UnmarshalJSON(reversedJSON(fed.Object)); err != nil {
			t.Fatalf("re-encoded resource: %v", err)
		}
		sameSpec, err := ParseSpec(same)
		if err != nil {
			t.Fatalf("re-encoded resource: %v", err)
		}
		if ContentHash(Template(same)) != tHash || OverridesHash(sameSpec.Overrides, maps.Clone(divided)) != oHash {
			t.Fatalf("a re-encoded resource hashes differently: %s", reversedJSON(fed.Object))
		}

		st := typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "5", TemplateHash: tHash, OverrideVersion: "7", OverrideHash: oHash}
		if v := NextVersions(st, tHash, oHash); v.Template != "5" || v.Override != "7" {
			t.Fatalf("unchanged hashes moved the versions to %s, %s", v.Template, v.Override)
		}

		tmpl := Template(fed)
		changedTemplate := ContentHash(changed(tmpl, int(pick%uint(leaves(tmpl)))))
		if changedTemplate == tHash {
			t.Fatalf("a changed template hashes as before: %v", tmpl)
		}
		if v := NextVersions(st, changedTemplate, oHash); v.Template != "6" || v.Override != "7" {
			t.Fatalf("a changed template moved the versions to %s, %s", v.Template, v.Override)
		}
		if h := OverridesHash(changedOverrides(spec.Overrides, pick), divided); h == oHash {
			t.Fatalf("changed overrides hash as before: %+v", spec.Overrides)
		}
		if divided != nil {
			more := maps.Clone(divided)
			more["cluster2"]++
			if OverridesHash(spec.Overrides, more) == oHash {
				t.Fatal("changed replicas hash as before")
			}
		}
	})
}

// reversedJSON encodes v with every object's keys in reverse order.
func reversedJSON(v any) []byte {
	var b bytes.Buffer
	var write func(v any)
	write = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			b.WriteString("{ ")
			for i, k := range slices.Backward(slices.Sorted(maps.Keys(x))) {
				if i < len(x)-1 {
					b.WriteString(" ,\n")
				}
				key, _ := json.Marshal(k)
				b.Write(key)
				b.WriteString(" : ")
				write(x[k])
			}
			b.WriteString(" }")
		case []any:
			b.WriteString("[ ")
			for i, item := range x {
				if i > 0 {
					b.WriteString(" , ")
				}
				write(item)
			}
			b.WriteString(" ]")
		default:
			raw, _ := json.Marshal(x)
			b.Write(raw)
		}
	}
	write(v)
	return b.Bytes()
}

// leaves counts the values changed can change in v: scalars, empty
// objects and lists, and at least one.
func leaves(v any) int {
	n := 0
	walkLeaves(v, func(any) any { n++; return nil })
	return max(n, 1)
}

// changed returns a copy of v whose pick-th leaf (in key order) has
// another value; an empty object gains a key.
func changed(v any, pick int) any {
	n := 0
	return walkLeaves(v, func(leaf any) any {
		defer func() { n++ }()
		if n != pick {
			return leaf
		}
		switch x := leaf.(type) {
		case string:
			return x + "~"
		case bool:
			return !x
		case nil:
			return "was null"
		case map[string]any:
			return map[string]any{"added": true}
		case []any:
			return []any{"added"}
		}
		return fmt.Sprintf("%v", leaf) // a number becomes a string
	})
}

// walkLeaves returns a copy of v with each leaf replaced by what fn
// returns for it, visiting object keys in sorted order.
func walkLeaves(v any, fn func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return fn(x)
		}
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[k] = walkLeaves(x[k], fn)
		}
		return out
	case []any:
		if len(x) == 0 {
			return fn(x)
		}
		out := make([]any, len(x))
		for i, item := range x {
			out[i] = walkLeaves(item, fn)
		}
		return out
	}
	return fn(v)
}

// changedOverrides returns a copy of overrides with one part changed,
// chosen by pick: a path, an op, a value, a cluster, or one more override.
func changedOverrides(overrides []typesv1beta1.ClusterOverride, pick uint) []typesv1beta1.ClusterOverride {
	out := make([]typesv1beta1.ClusterOverride, len(overrides))
	type at struct{ cluster, op int }
	var ops []at
	for i, co := range overrides {
		out[i] = *co.DeepCopy()
		for j := range co.ClusterOverrides {
			ops = append(ops, at{i, j})
		}
	}
	if len(ops) == 0 || pick%5 == 4 {
		if len(out) == 0 {
			return append(out, typesv1beta1.ClusterOverride{ClusterName: "cluster1"})
		}
		out[0].ClusterOverrides = append(out[0].ClusterOverrides, typesv1beta1.Override{Path: "/added"})
		return out
	}
	a := ops[int(pick/5)%len(ops)]
	o := &out[a.cluster].ClusterOverrides[a.op]
	switch pick % 5 {
	case 0:
		o.Path += "/x"
	case 1:
		o.Op = map[typesv1beta1.OverrideOp]typesv1beta1.OverrideOp{"add": "remove", "remove": "replace"}[o.Op]
		if o.Op == "" {
			o.Op = "add"
		}
	case 2:
		if o.Value == nil || len(o.Value.Raw) == 0 {
			o.Value = &apiextensionsv1.JSON{Raw: []byte("1")}
		} else {
			o.Value = &apiextensionsv1.JSON{Raw: append(append([]byte("["), o.Value.Raw...), ']')}
		}
	case 3:
		out[a.cluster].ClusterName += "x"
	}
	return out
}
