package propagation

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
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

// FuzzPlace: placement never panics; a selector is an error exactly when
// metav1.LabelSelectorAsSelector says so; the names are sorted and unique;
// named clusters are returned as named, and otherwise only joined clusters
// the selector matches, all of them; never one excludeClusters names.
func FuzzPlace(f *testing.F) {
	clusters := []byte(`{"cluster1":{"region":"eu"},"cluster2":{"region":"us","gpu":"true"},"cluster3":{}}`)
	for _, fed := range kubefedSamples(f) {
		spec, err := render.ParseSpec(fed)
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
		v := render.Versions{Template: "4", Override: "2", TemplateHash: "t", OverrideHash: "o"}
		now := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
		st := cpvStatus(old, v, int(placed), results, "", generation, now)

		var names []string
		drifted := int32(0)
		for _, cv := range st.ClusterVersions {
			names = append(names, string(cv.ClusterName))
			if len(cv.DriftHistory) > typesv1beta1.MaxDriftEpisodes {
				t.Fatalf("cluster %s keeps %d drift episodes; at most %d", cv.ClusterName, len(cv.DriftHistory), typesv1beta1.MaxDriftEpisodes)
			}
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
		if again := cpvStatus(written, v, int(placed), results, "", generation, now); !equality.Semantic.DeepEqual(again, st) {
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
