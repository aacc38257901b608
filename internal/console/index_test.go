package console

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// cpv is a CPV of a FederatedDeployment placed on clusters, with the
// given entries.
func cpv(namespace, name string, placed []string, entries ...typesv1beta1.ClusterVersion) *typesv1beta1.ClusterPropagatedVersion {
	c := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "deployment-" + name},
		Spec:       typesv1beta1.ClusterPropagatedVersionSpec{Template: name, TemplateKind: "FederatedDeployment", TemplateAPIVersion: "types.kubefed.io/v1beta1"},
		Status:     typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "2", OverrideVersion: "1", ClusterVersions: entries},
	}
	for _, p := range placed {
		c.Spec.Clusters = append(c.Spec.Clusters, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(p)})
	}
	return c
}

func entry(cluster string, state typesv1beta1.DriftState) typesv1beta1.ClusterVersion {
	return typesv1beta1.ClusterVersion{ClusterName: typesv1beta1.ClusterName(cluster), State: state, TemplateVersion: "2", OverrideVersion: "1"}
}

func fc(name string, mode corev1beta1.SyncMode) *corev1beta1.FederatedCluster {
	return &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1beta1.FederatedClusterSpec{SyncMode: mode}}
}

// testIndex is a fleet of three resources on clusters a, b and the Pull
// cluster edge.
func testIndex() *index {
	ix := newIndex()
	ix.setCluster("a", fc("a", corev1beta1.SyncModePush))
	ix.setCluster("b", fc("b", corev1beta1.SyncModePush))
	ix.setCluster("edge", fc("edge", corev1beta1.SyncModePull))
	ix.upsert(cpv("shop", "web", []string{"a", "b", "edge"}, entry("a", typesv1beta1.InSync), entry("b", typesv1beta1.ModifiedOutOfBand)))
	ix.upsert(cpv("shop", "api", []string{"a", "b"}, entry("a", typesv1beta1.InSync)))
	ix.upsert(cpv("blog", "web", []string{"a"}, entry("a", typesv1beta1.Missing)))
	return ix
}

func TestFleetFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query      string
		wantRows   []string
		wantCounts map[string]int
		wantCols   []string
	}{
		{query: "", wantRows: []string{"FederatedDeployment/blog/web", "FederatedDeployment/shop/api", "FederatedDeployment/shop/web"},
			wantCounts: map[string]int{"InSync": 2, "ModifiedOutOfBand": 1, "Missing": 1, "WaitingForAgent": 1, "Pending": 1}, wantCols: []string{"a", "b", "edge"}},
		{query: "ns=shop", wantRows: []string{"FederatedDeployment/shop/api", "FederatedDeployment/shop/web"},
			wantCounts: map[string]int{"InSync": 2, "ModifiedOutOfBand": 1, "WaitingForAgent": 1, "Pending": 1}},
		{query: "state=ModifiedOutOfBand", wantRows: []string{"FederatedDeployment/shop/web"},
			wantCounts: map[string]int{"InSync": 1, "ModifiedOutOfBand": 1, "WaitingForAgent": 1}},
		{query: "state=Drifted&cluster=a", wantRows: []string{"FederatedDeployment/blog/web"}, wantCounts: map[string]int{"Missing": 1}, wantCols: []string{"a"}},
		{query: "cluster=edge", wantRows: []string{"FederatedDeployment/shop/web"}, wantCounts: map[string]int{"WaitingForAgent": 1}},
		{query: "q=SHOP/W", wantRows: []string{"FederatedDeployment/shop/web"}},
		{query: "kind=federateddeployment.types.kubefed.io&ns=blog", wantRows: []string{"FederatedDeployment/blog/web"}},
		{query: "kind=FederatedConfigMap", wantRows: nil},
		{query: "size=1&page=2", wantRows: []string{"FederatedDeployment/shop/api"}},
	}
	ix := testIndex()
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			got := ix.fleet(ParseFilter(q))
			var ids []string
			for _, r := range got.Rows {
				ids = append(ids, r.ID)
			}
			if !slices.Equal(ids, tt.wantRows) {
				t.Errorf("rows %v, want %v", ids, tt.wantRows)
			}
			for state, n := range tt.wantCounts {
				if got.Counts[state] != n {
					t.Errorf("count of %s %d, want %d (counts %v)", state, got.Counts[state], n, got.Counts)
				}
			}
			if len(got.Counts) != len(States) {
				t.Errorf("counts %v lack states", got.Counts)
			}
			if tt.wantCols != nil && !slices.Equal(got.Clusters, tt.wantCols) {
				t.Errorf("columns %v, want %v", got.Clusters, tt.wantCols)
			}
		})
	}
}

func TestFleetCellsAndPages(t *testing.T) {
	t.Parallel()
	ix := testIndex()
	got := ix.fleet(ParseFilter(url.Values{"ns": {"shop"}, "q": {"web"}}))
	if len(got.Rows) != 1 {
		t.Fatalf("rows %+v", got.Rows)
	}
	cells := got.Rows[0].Cells
	if cells["a"].State != "InSync" || cells["b"].State != "ModifiedOutOfBand" || cells["edge"].State != StateWaitingForAgent || cells["a"].TemplateVersion != "2" {
		t.Errorf("cells %+v", cells)
	}
	if got.Rows[0].Link != "resource?kind=FederatedDeployment.types.kubefed.io&name=web&namespace=shop" {
		t.Errorf("link %q", got.Rows[0].Link)
	}
	all := ix.fleet(ParseFilter(url.Values{"size": {"2"}}))
	if all.Total != 3 || all.Pages != 2 || len(all.Rows) != 2 {
		t.Errorf("total %d, pages %d, rows %d; want 3, 2, 2", all.Total, all.Pages, len(all.Rows))
	}
}

func TestIndexUpdates(t *testing.T) {
	t.Parallel()
	ix := testIndex()
	_ = ix.fleet(Filter{Page: 1, PageSize: 10}) // sorts
	ix.upsert(cpv("shop", "web", []string{"a", "b"}, entry("a", typesv1beta1.InSync), entry("b", typesv1beta1.InSync)))
	got := ix.fleet(ParseFilter(url.Values{"state": {"ModifiedOutOfBand"}}))
	if got.Total != 0 {
		t.Errorf("after the edit was healed, %d resources are ModifiedOutOfBand", got.Total)
	}
	ix.remove("blog/deployment-web")
	if got := ix.fleet(Filter{Page: 1, PageSize: 10}); got.Total != 2 || got.Rows[0].ID != "FederatedDeployment/shop/api" {
		t.Errorf("after a removal: %+v", got.Rows)
	}
	ix.setCluster("edge", nil)
	ix.upsert(cpv("x", "lone", []string{"edge"}))
	if got := ix.fleet(ParseFilter(url.Values{"ns": {"x"}})); got.Rows[0].Cells["edge"].State != StatePending || !slices.Contains(got.Clusters, "edge") {
		t.Errorf("a cluster no FederatedCluster names: %+v, columns %v", got.Rows[0].Cells, got.Clusters)
	}
	ix.upsert(cpv("y", "future", []string{"a"}, entry("a", "SomeNewState")))
	if got := ix.fleet(ParseFilter(url.Values{"ns": {"y"}, "state": {"Drifted"}})); got.Total != 1 || got.Counts["SomeNewState"] != 1 ||
		got.Rows[0].Cells["a"].State != "SomeNewState" {
		t.Errorf("a state the console does not know: %+v, counts %v", got.Rows, got.Counts)
	}
	if r := ix.lookup("federateddeployment", "shop", "api", "kube-federation-system"); r == nil || r.key != "shop/deployment-api" {
		t.Errorf("lookup: %+v", r)
	}
	if r := ix.lookup("FederatedDeployment.apps", "shop", "api", "kube-federation-system"); r != nil {
		t.Errorf("lookup with another group found %s", r.key)
	}
}

func TestHistoryAndLedger(t *testing.T) {
	t.Parallel()
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC)) }
	since := at(50)
	web := cpv("shop", "web", []string{"a", "b"},
		typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{
			{Start: at(1), End: at(2), State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByEnforce},
			{Start: at(10), End: at(20), State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByResync, Resync: "kyverno"},
		}},
		typesv1beta1.ClusterVersion{ClusterName: "b", State: typesv1beta1.Missing, DriftedSince: &since, DriftHistory: []typesv1beta1.DriftEpisode{
			{Start: at(5), End: at(6), State: typesv1beta1.Missing, ResolvedBy: typesv1beta1.ResolvedByReturn},
		}})
	ix := newIndex()
	r := ix.upsert(web)
	h := ix.history(Filter{Page: 1, PageSize: 10})
	var ends []int
	for _, e := range h.Episodes {
		ends = append(ends, e.End.Minute())
	}
	if !slices.Equal(ends, []int{20, 6, 2}) || h.Total != 3 {
		t.Errorf("episodes end at %v, want newest first [20 6 2]", ends)
	}
	if h := ix.history(ParseFilter(url.Values{"resolvedBy": {"resync"}})); h.Total != 1 || h.Episodes[0].Resync != "kyverno" {
		t.Errorf("resolvedBy=resync: %+v", h.Episodes)
	}
	if h := ix.history(ParseFilter(url.Values{"cluster": {"b"}})); h.Total != 1 || h.Episodes[0].State != "Missing" {
		t.Errorf("cluster=b: %+v", h.Episodes)
	}
	l := ledger(r)
	if len(l) != 4 || !l[0].Open || l[0].Cluster != "b" || l[0].End != nil {
		t.Errorf("the ledger does not start with the open episode: %+v", l)
	}
}

func TestSafeNext(t *testing.T) {
	t.Parallel()
	for next, want := range map[string]string{
		"/resource?kind=x": "./resource?kind=x", "": "./", "//evil.example/x": "./", "https://evil.example/": "./", "/\\evil": "./", // loopback-check: not dialed
		"/signin": "./", "resource": "./",
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func TestDiffLines(t *testing.T) {
	t.Parallel()
	a := []string{"a: 1", "b: 2", "c: 3", "d: 4", "e: 5", "f: 6", "g: 7", "h: 8", "i: 9", "j: 10", "k: 11"}
	b := slices.Clone(a)
	b[9] = "j: 11"
	b = append(b, "l: 12")
	lines := diffLines(a, b)
	var ops []string
	for _, l := range lines {
		ops = append(ops, l.Op)
	}
	want := []string{"skip", "equal", "equal", "equal", "equal", "change", "equal", "add"}
	if !slices.Equal(ops, want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	if c := lines[5]; c.Left.Text != "j: 10" || c.Right.Text != "j: 11" || c.Left.N != 10 {
		t.Errorf("the change %+v %+v", c.Left, c.Right)
	}
}

func TestEmptyFleetEncodesLists(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(newIndex().fleet(Filter{Page: 1, PageSize: 10}))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"clusters":[]`, `"rows":[]`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("an empty fleet encodes as %s, without %s (the page's script would fail on null)", data, want)
		}
	}
}

// TestFailoverEpisodes shows a CPV's failover ledger beside its drift
// episodes: an ended failover in the history, filtered by its state and
// how it ended, and the one going on at the top of the resource's ledger.
func TestFailoverEpisodes(t *testing.T) {
	t.Parallel()
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2026, 12, 1, 10, m, 0, 0, time.UTC)) }
	end := at(30)
	web := cpv("shop", "web", []string{"a", "b"}, typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{
		{Start: at(1), End: at(2), State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByEnforce},
	}})
	web.Status.FailoverHistory = []typesv1beta1.FailoverEpisode{
		{Cluster: "b", Start: at(10), End: &end, Replicas: new(int32(2)), Surge: []typesv1beta1.ClusterName{"c"}, EndedBy: typesv1beta1.FailoverEndedAutomatic},
		{Cluster: "b", Start: at(40)},
	}
	ix := newIndex()
	r := ix.upsert(web)
	h := ix.history(Filter{Page: 1, PageSize: 10})
	if h.Total != 2 || h.Episodes[0].State != "FailedOver" || h.Episodes[0].Cluster != "b" || h.Episodes[0].ResolvedBy != "Automatic" ||
		*h.Episodes[0].Replicas != 2 || !slices.Equal(h.Episodes[0].Surge, []string{"c"}) {
		t.Errorf("history: %+v; want the ended failover first, then the drift episode", h.Episodes)
	}
	if h := ix.history(ParseFilter(url.Values{"state": {"failedover"}})); h.Total != 1 || h.Episodes[0].State != "FailedOver" {
		t.Errorf("state=failedover: %+v", h.Episodes)
	}
	if h := ix.history(ParseFilter(url.Values{"state": {"drifted"}})); h.Total != 1 || h.Episodes[0].State == "FailedOver" {
		t.Errorf("state=drifted lists a failover: %+v", h.Episodes)
	}
	if h := ix.history(ParseFilter(url.Values{"resolvedBy": {"automatic"}})); h.Total != 1 {
		t.Errorf("resolvedBy=automatic: %+v", h.Episodes)
	}
	if l := ledger(r); len(l) != 3 || !l[0].Open || l[0].State != "FailedOver" || l[0].Start.Minute() != 40 {
		t.Errorf("the ledger: %+v; want the failover going on first", l)
	}
}
