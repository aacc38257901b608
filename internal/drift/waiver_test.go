package drift

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// TestWaivers: PolicyFor keeps the waivers that name the cluster; Active
// honours those not expired and within the maximum; Waive splits changes
// by the paths they cover, and names the waiver that expires first.
func TestWaivers(t *testing.T) {
	now := time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(d)) }
	p := &typesv1beta1.DriftPolicy{Waivers: []typesv1beta1.DriftWaiver{
		{Clusters: []typesv1beta1.ClusterName{"a", "b"}, Paths: []typesv1beta1.JSONPointer{"/spec/replicas"}, Expires: at(2 * time.Hour), Reason: "later"},
		{Clusters: []typesv1beta1.ClusterName{"a"}, Paths: []typesv1beta1.JSONPointer{"/metadata/labels/"}, Expires: at(time.Hour), Reason: "sooner"},
		{Clusters: []typesv1beta1.ClusterName{"a"}, Paths: []typesv1beta1.JSONPointer{"/spec/paused"}, Expires: at(-time.Hour), Reason: "expired"},
		{Clusters: []typesv1beta1.ClusterName{"a"}, Paths: []typesv1beta1.JSONPointer{"/spec/strategy"}, Expires: at(40 * 24 * time.Hour), Reason: "too far"},
		{Clusters: []typesv1beta1.ClusterName{"c"}, Paths: []typesv1beta1.JSONPointer{"/data"}, Expires: at(time.Hour), Reason: "another cluster"},
	}}
	pol := PolicyFor(p, "a", nil, typesv1beta1.RemediationEnforce)
	if len(pol.Waivers) != 4 || len(pol.Active(now)) != 2 {
		t.Fatalf("waivers of a: %d, active %d; want 4 and 2", len(pol.Waivers), len(pol.Active(now)))
	}
	pol.MaxWaiver = 50 * 24 * time.Hour
	if len(pol.Active(now)) != 3 {
		t.Errorf("with a longer maximum: %d active, want 3", len(pol.Active(now)))
	}
	pol.MaxWaiver = 0
	changes := []Change{{Path: "/metadata/labels/x"}, {Path: "/spec/paused"}, {Path: "/spec/replicas"}, {Path: "/spec/replicasX"}}
	waived, rest, first := pol.Waive(changes, now)
	if len(waived) != 2 || waived[0].Path != "/metadata/labels/x" || waived[1].Path != "/spec/replicas" ||
		len(rest) != 2 || rest[0].Path != "/spec/paused" || rest[1].Path != "/spec/replicasX" || first.Reason != "sooner" {
		t.Errorf("Waive: waived %v, rest %v, first %+v", waived, rest, first)
	}
	if got := pol.Unhonoured([]Change{{Path: "/spec/paused"}, {Path: "/spec/strategy/type"}, {Path: "/data"}}, now); got != `the waiver "expired" expired at 2026-12-20T11:00:00Z; `+
		`the waiver "too far" is not honoured: it expires at 2027-01-29T12:00:00Z, more than 720h0m0s ahead (--max-waiver-duration)` {
		t.Errorf("Unhonoured = %q", got)
	}
	if got := pol.Unhonoured([]Change{{Path: "/spec/replicas"}, {Path: "/spec/template"}}, now); got != "" {
		t.Errorf("Unhonoured of paths honoured waivers cover, or none does = %q, want empty", got)
	}
	if got := NextExpiry(p, now); !got.Equal(now.Add(time.Hour)) {
		t.Errorf("NextExpiry = %s, want in an hour", got)
	}
	if got := NextExpiry(nil, now); !got.IsZero() {
		t.Errorf("NextExpiry of no policy = %s", got)
	}
}

// TestWaiversBySelector: a waiver's clusterSelector selects by the
// cluster's labels, a waiver of names by name only; a selector that does
// not parse applies nowhere and makes the policy Invalid, naming it.
func TestWaiversBySelector(t *testing.T) {
	expires := metav1.NewTime(time.Now().Add(time.Hour))
	p := &typesv1beta1.DriftPolicy{Waivers: []typesv1beta1.DriftWaiver{
		{ClusterSelector: &typesv1beta1.ClusterSelector{MatchLabels: map[string]string{"env": "lab"}}, Paths: []typesv1beta1.JSONPointer{"/data/mode"}, Expires: expires, Reason: "lab clusters"},
		{Clusters: []typesv1beta1.ClusterName{"b"}, Paths: []typesv1beta1.JSONPointer{"/data/other"}, Expires: expires, Reason: "by name"},
		{ClusterSelector: &typesv1beta1.ClusterSelector{}, Paths: []typesv1beta1.JSONPointer{"/data/all"}, Expires: expires, Reason: "every cluster"},
	}}
	for _, tt := range []struct {
		cluster string
		labels  map[string]string
		want    []string
	}{
		{"a", map[string]string{"env": "lab"}, []string{"lab clusters", "every cluster"}},
		{"a", map[string]string{"env": "prod"}, []string{"every cluster"}},
		{"b", nil, []string{"by name", "every cluster"}},
	} {
		pol := PolicyFor(p, tt.cluster, tt.labels, typesv1beta1.RemediationEnforce)
		var got []string
		for _, w := range pol.Waivers {
			got = append(got, w.Reason)
		}
		if strings.Join(got, ",") != strings.Join(tt.want, ",") || pol.Invalid != nil {
			t.Errorf("cluster %s %v: waivers %v (invalid: %v), want %v", tt.cluster, tt.labels, got, pol.Invalid, tt.want)
		}
	}
	if !SelectsByLabel(p) || SelectsByLabel(&typesv1beta1.DriftPolicy{Waivers: p.Waivers[1:2]}) || SelectsByLabel(nil) {
		t.Error("SelectsByLabel does not tell the policies that select by label")
	}
	bad := &typesv1beta1.DriftPolicy{Waivers: []typesv1beta1.DriftWaiver{p.Waivers[1],
		{ClusterSelector: &typesv1beta1.ClusterSelector{MatchLabels: map[string]string{"not a key!": "x"}}, Paths: []typesv1beta1.JSONPointer{"/data"}, Expires: expires, Reason: "bad"}}}
	pol := PolicyFor(bad, "b", nil, typesv1beta1.RemediationEnforce)
	if pol.Invalid == nil || !strings.Contains(pol.Invalid.Error(), "spec.driftPolicy.waivers[1].clusterSelector") || len(pol.Waivers) != 1 {
		t.Errorf("a selector that does not parse: invalid %v, %d waivers; want an error naming waivers[1] and the other waiver kept", pol.Invalid, len(pol.Waivers))
	}
}

func TestKeep(t *testing.T) {
	var obj, live map[string]any
	_ = json.Unmarshal([]byte(`{"spec":{"replicas":2,"template":{"spec":{"containers":[{"image":"a"}]}}},"metadata":{}}`), &obj)
	_ = json.Unmarshal([]byte(`{"spec":{"replicas":5,"template":{"spec":{"containers":[{"image":"b"}]}}},"metadata":{"labels":{"x/y":"z","other":"o"}}}`), &live)
	for _, p := range []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/x~1y", "/spec/missing", "/spec/template/spec/containers/3/image"} {
		Keep(obj, live, p)
	}
	got, _ := json.Marshal(obj)
	want := `{"metadata":{"labels":{"x/y":"z"}},"spec":{"replicas":5,"template":{"spec":{"containers":[{"image":"b"}]}}}}`
	if string(got) != want {
		t.Errorf("Keep: %s, want %s", got, want)
	}
	live["spec"].(map[string]any)["replicas"] = 7.0
	if obj["spec"].(map[string]any)["replicas"] != 5.0 {
		t.Errorf("Keep shares the member's values instead of copying them")
	}
}
