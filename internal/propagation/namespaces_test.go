package propagation

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

var (
	namespaces = Type{
		Name:                "namespaces",
		Federated:           schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedNamespace"},
		Target:              schema.GroupVersionKind{Version: "v1", Kind: "Namespace"},
		FederatedNamespaced: true,
	}
	configMaps = Type{
		Name:                "configmaps",
		Federated:           schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedConfigMap"},
		Target:              schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
		TargetNamespaced:    true,
		FederatedNamespaced: true,
	}
)

func object(namespace, name string, annotations map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetAnnotations(annotations)
	return u
}

func TestOutOfReach(t *testing.T) {
	t.Parallel()
	clusterScoped := namespaces
	clusterScoped.FederatedNamespaced = false
	tests := []struct {
		name       string
		typ        Type
		namespace  string
		objName    string
		wantReason string
		wantIn     string
	}{
		{"a FederatedNamespace named after its namespace", namespaces, "shop", "shop", "", ""},
		{"a FederatedNamespace named after another namespace", namespaces, "tenant", "payroll", typesv1beta1.ReasonNameNotNamespace,
			"named payroll in namespace tenant: it is not synced"},
		{"kube-system, in kube-system", namespaces, "kube-system", "kube-system", typesv1beta1.ReasonSystemNamespace, "never adopts, writes or deletes a kube-* namespace"},
		{"any kube- prefix", namespaces, "kube-anything", "kube-anything", typesv1beta1.ReasonSystemNamespace, "kube-anything is a Kubernetes system namespace"},
		{"kube-system named from another namespace: the name rule first", namespaces, "tenant", "kube-system", typesv1beta1.ReasonNameNotNamespace, "named kube-system in namespace tenant"},
		{"a cluster-scoped federated namespace kind is named freely", clusterScoped, "", "shop", "", ""},
		{"a cluster-scoped kube- namespace is still refused", clusterScoped, "", "kube-public", typesv1beta1.ReasonSystemNamespace, "kube-public"},
		{"other kinds are never refused", configMaps, "kube-system", "payroll", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reason, msg := OutOfReach(tt.typ, object(tt.namespace, tt.objName, nil))
			if reason != tt.wantReason || !strings.Contains(msg, tt.wantIn) || (reason == "") != (msg == "") {
				t.Errorf("outOfReach = %q, %q; want %q and a message with %q", reason, msg, tt.wantReason, tt.wantIn)
			}
		})
	}
}

func TestRemovalOf(t *testing.T) {
	t.Parallel()
	created := map[string]string{typesv1beta1.AnnotationCreatedNamespace: "true"}
	tests := []struct {
		name string
		typ  Type
		obj  *unstructured.Unstructured
		want removal
	}{
		{"a ConfigMap is deleted", configMaps, object("shop", "web", nil), removeDelete},
		{"a namespace Fedwarden created is deleted", namespaces, object("", "shop", created), removeDelete},
		{"an adopted namespace is released", namespaces, object("", "payroll", nil), removeRelease},
		{"a namespace marked otherwise is released", namespaces, object("", "payroll", map[string]string{typesv1beta1.AnnotationCreatedNamespace: "false"}), removeRelease},
		{"kube-system is left alone", namespaces, object("", "kube-system", nil), removeNothing},
		{"a kube- namespace is left alone even if Fedwarden created it", namespaces, object("", "kube-extra", created), removeNothing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := removalOf(tt.typ, tt.obj); got != tt.want {
				t.Errorf("removalOf = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestReleasePatchRemovesOnlyFedwardensMarks(t *testing.T) {
	t.Parallel()
	raw, err := releasePatch("uid-1")
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct {
			UID         string          `json:"uid"`
			Labels      map[string]*any `json:"labels"`
			Annotations map[string]*any `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &patch); err != nil {
		t.Fatal(err)
	}
	m := patch.Metadata
	labels, annotations := slices.Sorted(maps.Keys(m.Labels)), slices.Sorted(maps.Keys(m.Annotations))
	wantAnnotations := []string{typesv1beta1.AnnotationDesiredHash, typesv1beta1.AnnotationOverrideVersion, typesv1beta1.AnnotationOwnerUID, typesv1beta1.AnnotationTemplateVersion}
	if m.UID != "uid-1" || !slices.Equal(labels, []string{typesv1beta1.LabelManaged}) || !slices.Equal(annotations, wantAnnotations) {
		t.Errorf("patch %s: uid %q, removes labels %v and annotations %v; want uid-1, %v, %v", raw, m.UID, labels, annotations, typesv1beta1.LabelManaged, wantAnnotations)
	}
	for k, v := range m.Labels {
		if v != nil {
			t.Errorf("label %s is set to %v, want removed", k, *v)
		}
	}
	for k, v := range m.Annotations {
		if v != nil {
			t.Errorf("annotation %s is set to %v, want removed", k, *v)
		}
	}
}

func TestKeptByNamespace(t *testing.T) {
	t.Parallel()
	names := []string{"a", "b", "c"}
	tests := []struct {
		name        string
		restriction *scheduler.Restriction
		want        []string
	}{
		{"namespaces are not federated", nil, nil},
		{"the FederatedNamespace's placement is intent: nothing is kept by it", &scheduler.Restriction{Clusters: []string{"a"}, Intent: true}, nil},
		{"no FederatedNamespace: every placed cluster is kept by it", &scheduler.Restriction{}, []string{"a", "b", "c"}},
		{"a placement that cannot be read: those it does not list", &scheduler.Restriction{Clusters: []string{"b"}}, []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := slices.Sorted(maps.Keys(keptByNamespace(tt.restriction, names)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("keptByNamespace = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDropGone(t *testing.T) {
	t.Parallel()
	two := int32(2)
	why := []string{"namespace shop is not federated"}
	t0 := targets{
		names:    []string{"a", "b", "c"},
		replicas: map[string]int32{"a": 2, "b": 2},
		decision: framework.Decision{
			Clusters: []framework.Placement{{Name: "a", Replicas: &two}, {Name: "b", Replicas: &two}, {Name: "c"}},
			Kept:     []framework.Verdict{{Cluster: "a", Plugin: "FederatedNamespace", Reasons: why}, {Cluster: "b", Plugin: "FederatedNamespace", Reasons: why}},
			RuledOut: []framework.Verdict{{Cluster: "d", Plugin: "ClusterAffinity", Reasons: []string{"not in spec.placement.clusters"}}},
		},
	}
	results := []clusterResult{inSync("a", nil), {name: "b", gone: true}, inSync("c", nil)}
	got, t1 := dropGone(results, t0)
	var names []string
	for _, res := range got {
		names = append(names, res.name)
	}
	if !slices.Equal(names, []string{"a", "c"}) || !slices.Equal(t1.names, []string{"a", "c"}) || !maps.Equal(t1.replicas, map[string]int32{"a": 2}) {
		t.Errorf("results %v, names %v, replicas %v; want a and c, replicas a=2", names, t1.names, t1.replicas)
	}
	msg := t1.decision.Explain(1024)
	want := "scheduled to a (2 replicas), c; kept a, which holds a copy, despite FederatedNamespace: namespace shop is not federated; " +
		"ruled out b: FederatedNamespace: namespace shop is not federated; its copy is gone, and the restriction places no new one; d: ClusterAffinity: not in spec.placement.clusters"
	if msg != want {
		t.Errorf("Explain = %q\nwant      %q", msg, want)
	}
	if len(t0.names) != 3 || len(t0.decision.Kept) != 2 || len(t0.replicas) != 2 {
		t.Errorf("dropGone changed its input: %+v", t0)
	}
	if same, tSame := dropGone([]clusterResult{inSync("a", nil)}, t0); len(same) != 1 || len(tSame.names) != 3 {
		t.Errorf("nothing gone: results %v, names %v", same, tSame.names)
	}
}

func TestRefusedStatus(t *testing.T) {
	t.Parallel()
	now := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	old := typesv1beta1.FederatedStatus{
		ClusterCount: new(int32(2)),
		Clusters:     []typesv1beta1.PropagationStatus{{Name: "a", Reason: typesv1beta1.ClusterPropagated}},
		Conditions:   []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue, Reason: "Kept"}},
	}
	st := refusedStatus(old, typesv1beta1.ReasonNameNotNamespace, "not synced", 3, now)
	for _, typ := range []string{typesv1beta1.FederatedScheduled, typesv1beta1.FederatedPropagated} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != typesv1beta1.ReasonNameNotNamespace || c.Message != "not synced" || c.ObservedGeneration != 3 {
			t.Errorf("%s = %+v, want False, NameNotNamespace, at generation 3", typ, c)
		}
	}
	if meta.FindStatusCondition(st.Conditions, "Other") == nil || st.ClusterCount == nil || *st.ClusterCount != 0 || len(st.Clusters) != 0 || st.ObservedGeneration != 3 {
		t.Errorf("status = %+v; want the other condition kept, no cluster, generation 3", st)
	}
	if len(old.Conditions) != 1 {
		t.Errorf("refusedStatus changed the old conditions: %+v", old.Conditions)
	}
}
