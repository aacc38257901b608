package drift

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

// columns splits a table line into its cells, which are two or more
// spaces apart.
var columns = regexp.MustCompile(`\s{2,}`)

// --history lists the ledgers' ended episodes, the most recent first, with
// what resolved each; -o wide adds managers, versions and the resync value;
// -o json carries every field of the episode.
func TestHistory(t *testing.T) {
	cpv := typesv1beta1.ClusterPropagatedVersion{}
	cpv.Namespace = "shop"
	cpv.Spec = typesv1beta1.ClusterPropagatedVersionSpec{Template: "web", TemplateKind: "FederatedDeployment"}
	cpv.Status.ClusterVersions = []typesv1beta1.ClusterVersion{
		{ClusterName: "beijing", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{
			{Start: *ago(3 * time.Hour), End: *ago(2 * time.Hour), State: typesv1beta1.Unreachable, ResolvedBy: typesv1beta1.ResolvedByReturn},
			{Start: *ago(20 * time.Minute), End: *ago(5 * time.Minute), State: typesv1beta1.ModifiedOutOfBand, ChangedPaths: []string{"/spec/replicas"}, ChangedBy: []string{"kubectl-edit"},
				Before: typesv1beta1.EpisodeVersions{TemplateVersion: "2", OverrideVersion: "1"}, After: typesv1beta1.EpisodeVersions{TemplateVersion: "2", OverrideVersion: "1"},
				ResolvedBy: typesv1beta1.ResolvedByResync, Resync: "kyverno-2026-03-01"},
		}},
		{ClusterName: "shanghai", State: typesv1beta1.Missing, DriftedSince: ago(time.Minute)},
	}
	got := episodes([]typesv1beta1.ClusterPropagatedVersion{cpv}, federatedtype.Scopes{})
	if len(got) != 2 || got[0].ResolvedBy != typesv1beta1.ResolvedByResync || got[1].State != typesv1beta1.Unreachable {
		t.Fatalf("episodes = %+v; want the two ended ones, the most recent first", got)
	}
	var out bytes.Buffer
	if err := printEpisodes(&out, formatWide, got, true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NAMESPACE", "RESOURCE", "CLUSTER", "STATE", "ENDED", "LASTED", "RESOLVED BY", "PATHS", "CHANGED BY", "VERSIONS", "RESYNC"},
		{"shop", "federateddeployment/web", "beijing", "ModifiedOutOfBand", "5m ago", "15m", "Resync", "/spec/replicas", "kubectl-edit", "t2/o1→t2/o1", "kyverno-2026-03-01"},
		{"shop", "federateddeployment/web", "beijing", "Unreachable", "120m ago", "60m", "Returned", "<none>", "<none>", "t?/o?→t?/o?", "<none>"},
	}
	if len(lines) != len(want) {
		t.Fatalf("table:\n%s", out.String())
	}
	for i, w := range want {
		if cells := columns.Split(lines[i], -1); !slices.Equal(cells, w) {
			t.Errorf("line %d = %q; want %q", i, lines[i], w)
		}
	}
	out.Reset()
	if err := printEpisodes(&out, formatJSON, got[:1], false, now); err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal(out.Bytes(), &items); err != nil || len(items) != 1 || items[0]["resync"] != "kyverno-2026-03-01" || items[0]["cluster"] != "beijing" || items[0]["resolvedBy"] != "Resync" {
		t.Errorf("-o json = %s (%v)", out.String(), err)
	}
}

// -o wide names each manager with the operations the ledger records for it;
// an episode recorded before operations were shows the names alone.
func TestHistoryOperations(t *testing.T) {
	update, apply := metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	tests := []struct {
		name     string
		managers []string
		ops      []typesv1beta1.ManagerOperation
		want     string
	}{
		{"no operations recorded", []string{"kubectl-edit"}, nil, "kubectl-edit"},
		{"one each", []string{"kube-controller-manager", "kubectl-edit"}, []typesv1beta1.ManagerOperation{
			{Manager: "kube-controller-manager", Operation: update, Paths: []string{"/spec/replicas"}},
			{Manager: "kubectl-edit", Operation: update, Paths: []string{"/spec/paused"}},
		}, "kube-controller-manager (Update),kubectl-edit (Update)"},
		{"a manager that applied and updated", []string{"kubectl"}, []typesv1beta1.ManagerOperation{
			{Manager: "kubectl", Operation: update, Paths: []string{"/spec/replicas"}},
			{Manager: "kubectl", Operation: apply, Paths: []string{"/spec/paused"}},
		}, "kubectl (Apply/Update)"},
	}
	for _, tt := range tests {
		ep := typesv1beta1.DriftEpisode{Start: *ago(time.Hour), End: *ago(time.Hour), State: typesv1beta1.ModifiedOutOfBand, ChangedPaths: []string{"/spec/replicas"},
			ChangedBy: tt.managers, ChangedByOperations: tt.ops, ResolvedBy: typesv1beta1.ResolvedByEnforce}
		var out bytes.Buffer
		if err := printEpisodes(&out, formatWide, []Episode{{Namespace: "shop", Kind: "FederatedDeployment", Name: "web", Cluster: "a", DriftEpisode: ep}}, false, now); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if cells := columns.Split(lines[len(lines)-1], -1); len(cells) != 10 || cells[7] != tt.want {
			t.Errorf("%s: line %q; want CHANGED BY %q", tt.name, lines[len(lines)-1], tt.want)
		}
	}
}
