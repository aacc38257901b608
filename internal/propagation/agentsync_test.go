package propagation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// An agent applies what a CPV places on its cluster only where the
// resource's placement, which it can read, agrees: a placement that names
// clusters must name this one, and none may exclude it by name. A
// clusterSelector is not checked (the agent does not read cluster labels).
func TestPlacementDisagrees(t *testing.T) {
	t.Parallel()
	named := func(names ...string) []typesv1beta1.PlacementCluster {
		out := []typesv1beta1.PlacementCluster{}
		for _, n := range names {
			out = append(out, typesv1beta1.PlacementCluster{Name: typesv1beta1.ClusterName(n)})
		}
		return out
	}
	gold := &typesv1beta1.ClusterSelector{MatchLabels: map[string]string{"tier": "gold"}}
	tests := []struct {
		name      string
		placement typesv1beta1.Placement
		want      string
	}{
		{"named", typesv1beta1.Placement{Clusters: named("push-1", "edge")}, ""},
		{"not named", typesv1beta1.Placement{Clusters: named("push-1")}, "not in spec.placement.clusters"},
		{"an empty list names none", typesv1beta1.Placement{Clusters: named()}, "not in spec.placement.clusters"},
		{"named and excluded", typesv1beta1.Placement{Clusters: named("edge"), ExcludeClusters: named("edge")}, "excluded by spec.placement.excludeClusters"},
		{"a selector: not checked", typesv1beta1.Placement{ClusterSelector: gold}, ""},
		{"a selector, excluded by name", typesv1beta1.Placement{ClusterSelector: gold, ExcludeClusters: named("edge")}, "excluded by spec.placement.excludeClusters"},
		{"no placement: not checked", typesv1beta1.Placement{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := placementDisagrees(tt.placement, "edge")
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("placementDisagrees = %q, want %q", got, tt.want)
			}
		})
	}
}

// An agent applies a held revision only when its content has the key the
// host recorded for it (that of its ControllerRevision).
func TestHeldDisagrees(t *testing.T) {
	t.Parallel()
	fedOf := func(spec string) *unstructured.Unstructured {
		t.Helper()
		return mustFederated(t, `{apiVersion: types.kubefed.io/v1beta1, kind: FederatedConfigMap, metadata: {name: x, namespace: ns}, spec: `+spec+`}`)
	}
	heldOf := func(fed *unstructured.Unstructured) typesv1beta1.HeldRevision {
		t.Helper()
		overrides, _, _ := unstructured.NestedSlice(fed.Object, "spec", "overrides")
		h, err := rollout.Held(rollout.Revision{Number: 1, Template: render.Template(fed), Overrides: overrides, Key: rollout.KeyOf(fed)})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	plain := fedOf(`{template: {data: {greeting: v1}}}`)
	emptyOverrides := fedOf(`{template: {data: {greeting: v1}}, overrides: []}`)
	withOverrides := fedOf(`{template: {data: {greeting: v1}, metadata: {labels: {n: 3}}}, overrides: [{clusterName: edge, clusterOverrides: [{path: /data/greeting, value: hi}]}]}`)
	swapped := heldOf(plain)
	swapped.Template = heldOf(fedOf(`{template: {data: {greeting: injected}}}`)).Template
	unkeyed := swapped
	unkeyed.TemplateHash, unkeyed.OverridesHash = "", ""
	otherOverrides := heldOf(withOverrides)
	otherOverrides.OverridesHash = heldOf(plain).OverridesHash
	tests := []struct {
		name     string
		held     typesv1beta1.HeldRevision
		disagree bool
	}{
		{"its own content", heldOf(plain), false},
		{"an empty overrides list, stored as none", heldOf(emptyOverrides), false},
		{"overrides and integers, as decoded", heldOf(withOverrides), false},
		{"another template under its key", swapped, true},
		{"overrides its key does not name", otherOverrides, true},
		{"no key recorded (a CPV written before keys): not checked", unkeyed, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := heldDisagrees(tt.held)
			if (got != "") != tt.disagree {
				t.Errorf("heldDisagrees = %q, want a disagreement: %v", got, tt.disagree)
			}
		})
	}
}

// mustFederated decodes a federated resource written in YAML as the API
// server's objects have it (int64 where integral).
func mustFederated(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	obj := map[string]any{}
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}
