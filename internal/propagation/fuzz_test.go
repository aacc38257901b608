package propagation

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
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
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
		spec, err := parseSpec(fed)
		if err != nil {
			f.Fatal(err)
		}
		tmpl := mustJSON(f, template(fed))
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
		typ := deployments
		if ingress {
			typ = ingresses
		}
		fed := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": typ.Federated.GroupVersion().String(), "kind": typ.Federated.Kind,
			"metadata": map[string]any{"name": "web", "namespace": "ns"},
			"spec":     map[string]any{"template": tmpl},
		}}
		before := fed.DeepCopy()
		got, err := render(typ, fed, overrides)
		again, errAgain := render(typ, fed, overrides)
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
		if got.GetAPIVersion() != typ.Target.GroupVersion().String() || got.GetKind() != typ.Target.Kind ||
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

// FuzzPlace: placement never panics; a selector is an error exactly when
// metav1.LabelSelectorAsSelector says so; the names are sorted and unique;
// named clusters are returned as named, and otherwise only joined clusters
// the selector matches, all of them; never one excludeClusters names.
func FuzzPlace(f *testing.F) {
	clusters := []byte(`{"cluster1":{"region":"eu"},"cluster2":{"region":"us","gpu":"true"},"cluster3":{}}`)
	for _, fed := range kubefedSamples(f) {
		spec, err := parseSpec(fed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(mustJSON(f, spec.Placement), clusters)
	}
	f.Add([]byte(`{"clusterSelector":{}}`), clusters)
	f.Add([]byte(`{"clusters":[]}`), clusters)
	f.Add([]byte(`{"clusterSelector":{"matchLabels":{"region":"eu"}}}`), clusters)
	f.Add([]byte(`{"clusterSelector":{"matchExpressions":[{"key":"gpu","operator":"DoesNotExist"},{"key":"region","operator":"In","values":["eu","us"]}]}}`), clusters)
	f.Add([]byte(`{"clusterSelector":{"matchExpressions":[{"key":"gpu","operator":"Exists","values":["x"]}]}}`), clusters)
	f.Add([]byte(`{"clusterSelector":{"matchLabels":{"region":"eu west"}}}`), clusters)
	f.Add([]byte(`{"clusters":[{"name":"b"},{"name":"a"},{"name":"b"}],"clusterSelector":{"matchLabels":{"x":"y"}}}`), clusters)
	f.Add([]byte(`{"clusterSelector":{},"excludeClusters":[{"name":"cluster2"}]}`), clusters)
	f.Add([]byte(`{"clusters":[{"name":"a"},{"name":"cluster1"}],"excludeClusters":[{"name":"a"}]}`), clusters)
	f.Fuzz(func(t *testing.T, placementJSON, clustersJSON []byte) {
		var p typesv1beta1.Placement
		if err := json.Unmarshal(placementJSON, &p); err != nil {
			return
		}
		var labelsOf map[string]map[string]string
		if err := json.Unmarshal(clustersJSON, &labelsOf); err != nil {
			return
		}
		// Joined clusters in reverse order of name: place must sort.
		var joined []corev1beta1.FederatedCluster
		for _, name := range slices.Backward(slices.Sorted(maps.Keys(labelsOf))) {
			fc := corev1beta1.FederatedCluster{}
			fc.Name, fc.Labels = name, labelsOf[name]
			joined = append(joined, fc)
		}
		got, err := place(p, joined)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("placed %q: not sorted and unique", got)
		}
		switch {
		case p.Clusters != nil:
			var want []string
			for _, c := range p.Clusters {
				if !excluded(p, string(c.Name)) {
					want = append(want, string(c.Name))
				}
			}
			slices.Sort(want)
			want = slices.Compact(want)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("placed %q, %v; want the named clusters not excluded %q", got, err, want)
			}
		case p.ClusterSelector == nil:
			if err != nil || len(got) != 0 {
				t.Fatalf("placed %q, %v without clusters or a selector", got, err)
			}
		default:
			ls := &metav1.LabelSelector{MatchLabels: p.ClusterSelector.MatchLabels}
			for _, r := range p.ClusterSelector.MatchExpressions {
				ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: r.Key, Operator: metav1.LabelSelectorOperator(r.Operator), Values: r.Values})
			}
			sel, selErr := metav1.LabelSelectorAsSelector(ls)
			if (err == nil) != (selErr == nil) {
				t.Fatalf("place: %v; LabelSelectorAsSelector: %v", err, selErr)
			}
			if err != nil {
				return
			}
			var want []string
			for _, fc := range joined {
				if sel.Matches(labels.Set(fc.Labels)) && !excluded(p, fc.Name) {
					want = append(want, fc.Name)
				}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("placed %q; the joined clusters the selector matches, not excluded, are %q", got, want)
			}
		}
	})
}

// excluded reports whether p's excludeClusters names name.
func excluded(p typesv1beta1.Placement, name string) bool {
	return slices.ContainsFunc(p.ExcludeClusters, func(c typesv1beta1.PlacementCluster) bool { return string(c.Name) == name })
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
		spec, err := parseSpec(fed)
		if err != nil {
			return
		}
		var divided map[string]int32
		if replicas >= 0 {
			divided = map[string]int32{"cluster1": replicas, "cluster2": replicas / 2}
		}
		tHash, oHash := contentHash(template(fed)), overridesHash(spec.Overrides, divided)

		// The same resource, encoded with every object's keys in reverse
		// order and other spacing.
		same := &unstructured.Unstructured{}
		if err := same.UnmarshalJSON(reversedJSON(fed.Object)); err != nil {
			t.Fatalf("re-encoded resource: %v", err)
		}
		sameSpec, err := parseSpec(same)
		if err != nil {
			t.Fatalf("re-encoded resource: %v", err)
		}
		if contentHash(template(same)) != tHash || overridesHash(sameSpec.Overrides, maps.Clone(divided)) != oHash {
			t.Fatalf("a re-encoded resource hashes differently: %s", reversedJSON(fed.Object))
		}

		st := typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "5", TemplateHash: tHash, OverrideVersion: "7", OverrideHash: oHash}
		if v := nextVersions(st, tHash, oHash); v.template != "5" || v.override != "7" {
			t.Fatalf("unchanged hashes moved the versions to %s, %s", v.template, v.override)
		}

		tmpl := template(fed)
		changedTemplate := contentHash(changed(tmpl, int(pick%uint(leaves(tmpl)))))
		if changedTemplate == tHash {
			t.Fatalf("a changed template hashes as before: %v", tmpl)
		}
		if v := nextVersions(st, changedTemplate, oHash); v.template != "6" || v.override != "7" {
			t.Fatalf("a changed template moved the versions to %s, %s", v.template, v.override)
		}
		if h := overridesHash(changedOverrides(spec.Overrides, pick), divided); h == oHash {
			t.Fatalf("changed overrides hash as before: %+v", spec.Overrides)
		}
		if divided != nil {
			more := maps.Clone(divided)
			more["cluster2"]++
			if overridesHash(spec.Overrides, more) == oHash {
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

// FuzzCPVStatus: the merge of the clusters' results into the CPV status
// never panics; it has one entry per cluster that has one, sorted by name;
// its counts add up; it reads back from JSON as it was written (the
// reconciler compares what it reads with what it would write); and merging
// again from what it wrote changes nothing.
func FuzzCPVStatus(f *testing.F) {
	cpv := decodeFile(f, "testdata/cpv-example.yaml")
	old := mustJSON(f, cpv.Object["status"])
	long := strings.Repeat("admission webhook \"policy.example\" denied the request: ", 18) + "ポリシー違反: ラベル team が必要です"
	f.Add(old, []byte(`[{"name":"cluster-beijing","state":"InSync","object":{"rv":"12346","generation":3,"templateVersion":"3","overrideVersion":"1"},"written":true},
{"name":"cluster-shanghai","state":"ApplyFailed","reason":"ApplyFailed","message":"override 0 (replace /spec/replicas) does not apply"},
{"name":"cluster-hangzhou","fromAgent":true,"entry":{"state":"InSync","version":"9","templateVersion":"3","overrideVersion":"1"}},
{"name":"cluster-wuhan","fromAgent":true,"pending":true}]`), uint8(4), int64(2))
	f.Add(old, []byte(`[{"name":"cluster-beijing","state":"ModifiedOutOfBand","object":{"rv":"12350","generation":2},"changes":[{"path":"/spec/replicas","manager":"kubectl"},{"path":"/metadata/labels/app"}]},
{"name":"cluster-shanghai","state":"ApplyFailed","reason":"ApplyFailed","message":`+string(mustJSON(f, long))+`}]`), uint8(2), int64(3))
	f.Add([]byte(`{}`), []byte(`[]`), uint8(0), int64(1))
	f.Fuzz(func(t *testing.T, oldJSON, resultsJSON []byte, placed uint8, generation int64) {
		var old typesv1beta1.ClusterPropagatedVersionStatus
		if err := json.Unmarshal(oldJSON, &old); err != nil {
			return
		}
		old = roundTrip(t, old)
		if !uniqueBy(old.ClusterVersions, func(cv typesv1beta1.ClusterVersion) string { return string(cv.ClusterName) }) {
			return // the CRD keeps one entry per cluster
		}
		var fuzzed []fuzzResult
		if err := json.Unmarshal(resultsJSON, &fuzzed); err != nil {
			return
		}
		fuzzed = roundTrip(t, fuzzed)
		if !uniqueBy(fuzzed, func(r fuzzResult) string { return r.Name }) {
			return // a sync has one result per cluster
		}
		results := make([]clusterResult, len(fuzzed))
		want := map[string]bool{}
		for i, r := range fuzzed {
			results[i] = r.result()
			if !r.FromAgent || r.Entry != nil {
				want[r.Name] = true
			}
		}
		v := versions{template: "4", override: "2", templateHash: "t", overrideHash: "o"}
		now := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		st := cpvStatus(old, v, int(placed), results, generation, now)

		var names []string
		drifted := int32(0)
		for _, cv := range st.ClusterVersions {
			names = append(names, string(cv.ClusterName))
			if cv.State != typesv1beta1.InSync {
				drifted++
			}
		}
		if !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Fatalf("entries %q: not sorted and unique", names)
		}
		if !slices.Equal(names, slices.Sorted(maps.Keys(want))) {
			t.Fatalf("entries %q; want one for each of %q", names, slices.Sorted(maps.Keys(want)))
		}
		if *st.ClusterCount != int32(placed) || *st.DriftedClusters != drifted {
			t.Fatalf("clusterCount %d, driftedClusters %d; want %d, %d", *st.ClusterCount, *st.DriftedClusters, placed, drifted)
		}
		written := roundTrip(t, st)
		if !equality.Semantic.DeepEqual(written, st) {
			t.Fatalf("the status reads back otherwise than written:\n%+v\n%+v", st, written)
		}
		if again := cpvStatus(written, v, int(placed), results, generation, now); !equality.Semantic.DeepEqual(again, st) {
			t.Fatalf("merging again changed the status:\n%+v\n%+v", st, again)
		}
	})
}

// fuzzResult is a cluster's sync result as FuzzCPVStatus reads it.
type fuzzResult struct {
	Name, State, Reason, Message string
	Object                       *struct {
		RV                               string
		Generation                       int64
		TemplateVersion, OverrideVersion string
	}
	Written, FromAgent, Pending bool
	Entry                       *typesv1beta1.ClusterVersion
	Changes                     []drift.Change
}

func (r fuzzResult) result() clusterResult {
	res := clusterResult{name: r.Name, state: typesv1beta1.DriftState(r.State), reason: r.Reason, message: r.Message,
		written: r.Written, fromAgent: r.FromAgent, pending: r.Pending, changes: r.Changes}
	if r.Object != nil {
		res.object = memberCopy(r.Object.RV, r.Object.Generation, r.Object.TemplateVersion, r.Object.OverrideVersion)
	}
	if r.FromAgent && r.Entry != nil {
		e := *r.Entry
		e.ClusterName = typesv1beta1.ClusterName(r.Name) // as reportedByAgent finds it
		res.entry = &e
	}
	return res
}

// roundTrip is v encoded to JSON and decoded, as an API server returns
// what it stored.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out T
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func uniqueBy[T any](items []T, key func(T) string) bool {
	seen := map[string]bool{}
	for _, it := range items {
		if seen[key(it)] {
			return false
		}
		seen[key(it)] = true
	}
	return true
}
