package propagation

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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

// A sync the agent stops on an error no retry fixes (here a held revision
// whose content cannot be read) is recorded in its CPV entry: ApplyFailed,
// the error as its message, the versions the cluster has kept as they
// were. An error the retry may fix (the entry's own write) is not.
func TestAgentStopped(t *testing.T) {
	t.Parallel()
	fed := mustFederated(t, `{apiVersion: types.kubefed.io/v1beta1, kind: FederatedConfigMap, metadata: {name: x, namespace: ns}, spec: {template: {data: {greeting: v2}}}}`)
	spec, err := render.ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	in := newSyncInput(fed, spec, cpv, targetsOf(cpv))
	unreadable := typesv1beta1.HeldRevision{Number: 2, Template: &apiextensionsv1.JSON{Raw: []byte(`"not an object"`)}}
	_, heldErr := heldInput(in, cpv, unreadable)
	if heldErr == nil {
		t.Fatal("heldInput read a template that is not an object")
	}
	stopped := reconcile.TerminalError(fmt.Errorf("reading revision 2 in the ClusterPropagatedVersion's spec.rollout.held: %w", heldErr))

	res, ok := agentStopped("edge", 2, stopped)
	if !ok {
		t.Fatal("a terminal error is not recorded")
	}
	if res.state != typesv1beta1.ApplyFailed || res.reason != typesv1beta1.ClusterApplyFailed || res.target != 2 || res.retry ||
		!strings.HasPrefix(res.message, "not synced: reading revision 2 in the ClusterPropagatedVersion's spec.rollout.held: reading the template of held revision 2") ||
		!strings.Contains(res.message, "nothing is written to cluster edge") {
		t.Errorf("agentStopped = %+v", res)
	}
	prev := typesv1beta1.ClusterVersion{ClusterName: "edge", State: typesv1beta1.InSync, Version: "7", TemplateVersion: "1", OverrideVersion: "1"}
	cv := clusterVersion(prev, res, in.v, "", metav1.Now())
	if cv.State != typesv1beta1.ApplyFailed || cv.Version != "7" || cv.TemplateVersion != "1" || cv.OverrideVersion != "1" || cv.TargetRevision != 2 || cv.Message != res.message {
		t.Errorf("entry = %+v: want ApplyFailed, the versions the cluster had, target 2 and the message", cv)
	}

	for _, err := range []error{nil, fmt.Errorf("writing cluster edge's entry of ClusterPropagatedVersion ns/x: %w", errors.New("connection refused"))} {
		if res, ok := agentStopped("edge", 0, err); ok {
			t.Errorf("agentStopped(%v) records %+v, want nothing", err, res)
		}
	}
}
