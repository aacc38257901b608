package driftaction

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func value(s string) *apiextensionsv1.JSON { return &apiextensionsv1.JSON{Raw: []byte(s)} }

// TestCodified turns drifted paths into one cluster's overrides: an
// existing override of a path is replaced in place, the cluster's other
// overrides and the other clusters' are kept, a field the member added is
// an add, one it removed a remove.
func TestCodified(t *testing.T) {
	desired := doc(t, `{"metadata":{"labels":{"app":"web","tier":"front"}},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.25"}]}}}}`)
	live := doc(t, `{"metadata":{"labels":{"app":"web","hotfix":"yes"}},"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`)
	overrides := []typesv1beta1.ClusterOverride{
		{ClusterName: "cluster-a", ClusterOverrides: []typesv1beta1.Override{{Path: "/spec/replicas", Value: value("2")}}},
		{ClusterName: "cluster-b", ClusterOverrides: []typesv1beta1.Override{
			{Path: "/spec/template/spec/containers/0/image", Value: value(`"nginx:1.25"`)},
			{Op: typesv1beta1.OverrideAdd, Path: "/metadata/labels/zone", Value: value(`"b"`)},
		}},
	}
	before, _ := json.Marshal(overrides)
	paths := []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/hotfix", "/metadata/labels/tier"}
	got, changes, err := codified(overrides, "cluster-b", desired, live, paths)
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := json.Marshal(overrides); string(after) != string(before) {
		t.Errorf("codified changed its input:\n%s\nwas\n%s", after, before)
	}
	raw, _ := json.Marshal(got)
	want := `[{"clusterName":"cluster-a","clusterOverrides":[{"path":"/spec/replicas","value":2}]},` +
		`{"clusterName":"cluster-b","clusterOverrides":[` +
		`{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"nginx:1.27"},` +
		`{"op":"add","path":"/metadata/labels/zone","value":"b"},` +
		`{"op":"replace","path":"/spec/replicas","value":1},` +
		`{"op":"add","path":"/metadata/labels/hotfix","value":"yes"},` +
		`{"op":"remove","path":"/metadata/labels/tier"}]}]`
	if string(raw) != want {
		t.Errorf("overrides:\n%s\nwant\n%s", raw, want)
	}
	if len(changes) != 4 || changes[0].Op != typesv1beta1.OverrideReplace || changes[0].Desired != float64(5) || changes[0].Value != float64(1) {
		t.Errorf("changes: %+v", changes)
	}

	got, _, err = codified(nil, "cluster-c", desired, live, []string{"/spec/replicas"})
	if raw, _ := json.Marshal(got); err != nil || string(raw) != `[{"clusterName":"cluster-c","clusterOverrides":[{"op":"replace","path":"/spec/replicas","value":1}]}]` {
		t.Errorf("a cluster without overrides: %s, %v", raw, err)
	}
	if _, _, err := codified(nil, "cluster-c", desired, live, []string{"/spec/paused"}); err == nil || !strings.Contains(err.Error(), "/spec/paused") {
		t.Errorf("a path neither copy has: %v, want an error naming it", err)
	}
}

func TestValueAt(t *testing.T) {
	obj := doc(t, `{"a":{"b/c":[10,{"d~e":"x"}]}}`)
	for _, tt := range []struct {
		pointer string
		want    any
		found   bool
	}{
		{"/a/b~1c/0", float64(10), true},
		{"/a/b~1c/1/d~0e", "x", true},
		{"/a/b~1c/2", nil, false},
		{"/a/b~1c/01", nil, false},
		{"/a/b~1c/-1", nil, false},
		{"/a/x", nil, false},
		{"/a/b~1c/0/z", nil, false},
	} {
		got, found := valueAt(obj, tt.pointer)
		if found != tt.found || (found && got != tt.want) {
			t.Errorf("valueAt(%s) = %v, %t; want %v, %t", tt.pointer, got, found, tt.want, tt.found)
		}
	}
}

// TestDrifted chooses the paths to codify from a cluster's CPV entry, and
// refuses what cannot be codified with a message naming why.
func TestDrifted(t *testing.T) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Clusters: []typesv1beta1.PlacedCluster{{Name: "cluster-a"}, {Name: "cluster-b"}, {Name: "cluster-c"}}},
		Status: typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "cluster-a", State: typesv1beta1.InSync},
			{ClusterName: "cluster-b", State: typesv1beta1.ModifiedOutOfBand, ChangedPaths: []string{"/spec/replicas", "/metadata/labels/x"}},
		}},
	}
	if _, paths, err := drifted(cpv, "cluster-b", nil); err != nil || strings.Join(paths, ",") != "/spec/replicas,/metadata/labels/x" {
		t.Errorf("every drifted path: %v, %v", paths, err)
	}
	if _, paths, err := drifted(cpv, "cluster-b", []string{"/metadata/labels/x"}); err != nil || strings.Join(paths, ",") != "/metadata/labels/x" {
		t.Errorf("--path: %v, %v", paths, err)
	}
	for _, tt := range []struct {
		cluster string
		paths   []string
		want    string
	}{
		{"cluster-b", []string{"/spec/paused"}, "--path /spec/paused did not drift in cluster cluster-b; the drifted paths are /spec/replicas, /metadata/labels/x"},
		{"cluster-a", nil, "its copy in cluster cluster-a is InSync, with no field changed out of band"},
		{"cluster-c", nil, "no entry for cluster cluster-c"},
		{"cluster-d", nil, "it is not placed on cluster cluster-d"},
	} {
		if _, _, err := drifted(cpv, tt.cluster, tt.paths); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("drifted(%s, %v) = %v, want an error with %q", tt.cluster, tt.paths, err, tt.want)
		}
	}
}

// TestRefusedPaths names the path of each override admission refused.
func TestRefusedPaths(t *testing.T) {
	overrides := []typesv1beta1.ClusterOverride{
		{ClusterName: "cluster-a", ClusterOverrides: []typesv1beta1.Override{{Path: "/spec/replicas"}}},
		{ClusterName: "cluster-b", ClusterOverrides: []typesv1beta1.Override{{Path: "/spec/replicas"}, {Path: "/metadata/uid"}}},
	}
	err := apierrors.NewInvalid(schema.GroupKind{Group: "types.kubefed.io", Kind: "FederatedDeployment"}, "web", field.ErrorList{
		field.Invalid(field.NewPath("spec", "overrides").Index(1).Child("clusterOverrides").Index(1).Child("path"), "/metadata/uid", "path must not change the object's identity"),
	})
	got := refusedPaths(err, overrides, "cluster-b")
	if want := "/metadata/uid cannot be an override: "; got == nil || !strings.Contains(got.Error(), want) || !strings.Contains(got.Error(), "nothing was written") {
		t.Errorf("refusedPaths = %v, want it to contain %q", got, want)
	}
	other := apierrors.NewForbidden(schema.GroupResource{Resource: "federateddeployments"}, "web", nil)
	if got := refusedPaths(other, overrides, "cluster-b"); got != other {
		t.Errorf("a refusal that names no override: %v, want it unchanged", got)
	}
}
