package propagation

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// pullFed is a FederatedConfigMap whose template says greeting, rolled
// out in waves.
func pullFed(t *testing.T, greeting string) (*unstructured.Unstructured, render.Spec) {
	t.Helper()
	fed := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
		"metadata": map[string]any{"name": "cm", "namespace": "shop"},
		"spec": map[string]any{
			"template": map[string]any{"data": map[string]any{"greeting": greeting}},
			"rollout":  map[string]any{"strategy": "Waves", "waves": []any{map[string]any{"clusters": []any{"push-1"}}}},
		},
	}}
	spec, err := render.ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	return fed, spec
}

// An agent applies the revision the host named for its cluster, and never
// a content the host has not decided about: the resource changed since,
// no revision named yet, or one it cannot find, it waits. Under strategy
// All it applies the resource as it is.
func TestPullRevisionOf(t *testing.T) {
	v1, spec := pullFed(t, "v1")
	v2, _ := pullFed(t, "v2")
	held, err := rollout.Held(rollout.Revision{Number: 1, Template: map[string]any{"data": map[string]any{"greeting": "v1"}},
		Versions: render.Versions{Template: "1", Override: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	cpv := func(revision typesv1beta1.Revision, latest *unstructured.Unstructured, n typesv1beta1.Revision) *typesv1beta1.ClusterPropagatedVersion {
		c := &typesv1beta1.ClusterPropagatedVersion{}
		c.Spec.Clusters = []typesv1beta1.PlacedCluster{{Name: "pull-1"}}
		if revision != 0 {
			c.Spec.Clusters[0].Revision = &revision
		}
		c.Spec.Rollout = &typesv1beta1.PullRollout{Latest: rollout.RefOf(n, rollout.KeyOf(latest)), Held: []typesv1beta1.HeldRevision{held}}
		return c
	}
	tests := []struct {
		name string
		fed  *unstructured.Unstructured
		cpv  *typesv1beta1.ClusterPropagatedVersion
		want typesv1beta1.Revision
		held bool
		wait string
	}{
		{name: "the latest, as decided", fed: v2, cpv: cpv(2, v2, 2), want: 2},
		{name: "held at an earlier revision", fed: v2, cpv: cpv(1, v2, 2), want: 1, held: true},
		{name: "the resource changed since the decision", fed: v2, cpv: cpv(1, v1, 1), wait: "changed since the host decided on revision 1"},
		{name: "no revision named", fed: v2, cpv: cpv(0, v2, 2), wait: "names no revision"},
		{name: "a revision neither latest nor held", fed: v2, cpv: cpv(3, v2, 2), wait: "revision 3 is neither the latest nor held"},
		{name: "no rollout in the CPV", fed: v2, cpv: &typesv1beta1.ClusterPropagatedVersion{}, wait: "names no revision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pullRevisionOf(tt.fed, spec, tt.cpv, "pull-1")
			if tt.wait != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wait) {
					t.Fatalf("pullRevisionOf = %+v, %v; want to wait: %s", got, err, tt.wait)
				}
				return
			}
			if err != nil || got.number != tt.want || (got.held != nil) != tt.held {
				t.Fatalf("pullRevisionOf = revision %d (held %v), %v; want revision %d (held %v)", got.number, got.held != nil, err, tt.want, tt.held)
			}
		})
	}
	all := spec
	all.Rollout = &typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutAll}
	if got, err := pullRevisionOf(v2, all, &typesv1beta1.ClusterPropagatedVersion{}, "pull-1"); err != nil || got.number != 0 || got.held != nil {
		t.Errorf("under strategy All: %+v, %v; want the latest, unnumbered", got, err)
	}
}

// A held revision's input renders what the revision held, with its
// versions, and keeps the resync the sync acts on.
func TestHeldInput(t *testing.T) {
	v2, spec := pullFed(t, "v2")
	held, err := rollout.Held(rollout.Revision{Number: 1, Template: map[string]any{"data": map[string]any{"greeting": "v1"}, "metadata": map[string]any{"labels": map[string]any{"n": int64(3)}}},
		Versions: render.Versions{Template: "4", Override: "2"}})
	if err != nil {
		t.Fatal(err)
	}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	in := newSyncInput(v2, spec, cpv, targets{})
	in.resync, in.force = "now", true
	h, err := heldInput(in, cpv, held)
	if err != nil {
		t.Fatal(err)
	}
	if h.v != (render.Versions{Template: "4", Override: "2"}) || h.resync != "now" || !h.force {
		t.Errorf("held input: versions %+v, resync %q force %v", h.v, h.resync, h.force)
	}
	if got, _, _ := unstructured.NestedString(h.fed.Object, "spec", "template", "data", "greeting"); got != "v1" {
		t.Errorf("held input's template says %q, want v1", got)
	}
	if got, _, _ := unstructured.NestedString(v2.Object, "spec", "template", "data", "greeting"); got != "v2" {
		t.Errorf("the resource itself was changed: %q", got)
	}
	if n, ok, _ := unstructured.NestedFieldNoCopy(h.fed.Object, "spec", "template", "metadata", "labels", "n"); !ok || n != int64(3) {
		t.Errorf("an integer of the held revision reads back as %T %v, want int64 3 (as the resource had it)", n, n)
	}
}

// The host names each Pull cluster's revision and hands its agent the
// content of those held at an earlier one, once each; Push clusters get
// nothing, and a revision no longer kept gives the latest.
func TestPullPlan(t *testing.T) {
	fed, spec := pullFed(t, "v3")
	pull := &corev1beta1.FederatedCluster{Spec: corev1beta1.FederatedClusterSpec{SyncMode: corev1beta1.SyncModePull}}
	push := &corev1beta1.FederatedCluster{}
	s := &syncState{fed: fed, spec: spec,
		t:   targets{names: []string{"push-1", "pull-1", "pull-2", "pull-3", "pull-4"}},
		set: clusterSet{"push-1": push, "pull-1": pull, "pull-2": pull, "pull-3": pull, "pull-4": pull}}
	rev1 := rollout.Revision{Number: 1, Template: map[string]any{"data": map[string]any{"greeting": "v1"}}, Versions: render.Versions{Template: "1", Override: "1"}}
	p := &rolloutPlan{RolloutDecision: RolloutDecision{Revisions: []rollout.Revision{rev1}}}
	p.Decision.Status.Revision = 3
	p.Decision.Targets = map[string]typesv1beta1.Revision{"push-1": 1, "pull-1": 1, "pull-2": 1, "pull-3": 3, "pull-4": 2}
	got, err := p.pullPlan(s)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]typesv1beta1.Revision{"pull-1": 1, "pull-2": 1, "pull-3": 3, "pull-4": 3}
	if len(got.revisions) != len(want) {
		t.Errorf("revisions %v, want %v", got.revisions, want)
	}
	for name, n := range want {
		if got.revisions[name] != n {
			t.Errorf("%s: revision %d, want %d", name, got.revisions[name], n)
		}
	}
	if len(got.rollout.Held) != 1 || got.rollout.Held[0].Number != 1 || got.rollout.Held[0].TemplateVersion != "1" {
		t.Errorf("held %+v, want revision 1 once", got.rollout.Held)
	}
	if got.rollout.Latest.Number != 3 || !rollout.Names(got.rollout.Latest, rollout.KeyOf(fed)) {
		t.Errorf("latest %+v does not name the resource's content as revision 3", got.rollout.Latest)
	}
	s.t.names = []string{"push-1"}
	if got, err := p.pullPlan(s); got != nil || err != nil {
		t.Errorf("without Pull clusters: %+v, %v; want none", got, err)
	}
}

// A held revision the API server encoded otherwise (spaces, key order) is
// the same spec: no write for it; another content is not.
func TestSameSpecComparesHeldContentDecoded(t *testing.T) {
	spec := func(template string) typesv1beta1.ClusterPropagatedVersionSpec {
		return typesv1beta1.ClusterPropagatedVersionSpec{Template: "cm", Rollout: &typesv1beta1.PullRollout{
			Latest: typesv1beta1.RevisionKey{Number: 2, TemplateHash: "t", OverridesHash: "o"},
			Held:   []typesv1beta1.HeldRevision{{Number: 1, TemplateVersion: "1", OverrideVersion: "1", Template: &apiextensionsv1.JSON{Raw: []byte(template)}}},
		}}
	}
	if !sameSpec(spec(`{"data": {"a": "1", "b": 2}}`), spec(`{"data":{"b":2,"a":"1"}}`)) {
		t.Error("the same content, encoded otherwise, was taken for a change")
	}
	if sameSpec(spec(`{"data":{"a":"1"}}`), spec(`{"data":{"a":"2"}}`)) {
		t.Error("another content was taken for the same")
	}
	other := spec(`{"data":{"a":"1"}}`)
	other.Rollout.Latest.Number = 3
	if sameSpec(spec(`{"data":{"a":"1"}}`), other) {
		t.Error("another latest revision was taken for the same")
	}
}
