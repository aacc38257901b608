package propagation

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/render"
)

// Each way back to InSync ends the episode with its onset, state, paths,
// managers and versions, credited to what ended it; a sync that leaves the
// copy out of InSync, or finds it in sync as it was, ends none.
func TestEndedEpisode(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(90 * time.Second))
	v := render.Versions{Template: "3", Override: "2"}
	edited := typesv1beta1.ClusterVersion{
		ClusterName: "a", State: typesv1beta1.ModifiedOutOfBand, DriftedSince: &t0,
		TemplateVersion: "3", OverrideVersion: "2",
		ChangedPaths: []string{"/spec/replicas"}, ChangedBy: []string{"hand-edit"},
	}
	offline := typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.Unreachable, DriftedSince: &t0, TemplateVersion: "2", OverrideVersion: "2"}
	inSyncBefore := typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync, TemplateVersion: "3", OverrideVersion: "2"}
	written := func() clusterResult {
		res := inSync("a", memberCopy("9", 2, "3", "2"))
		res.written = true
		return res
	}
	healedNow := func() clusterResult {
		res := written()
		res.healed = finding{state: typesv1beta1.ModifiedOutOfBand, seenAt: t0.Add(30 * time.Second), changes: []drift.Change{{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl-edit"}}}
		return res
	}
	tests := []struct {
		name      string
		prev      typesv1beta1.ClusterVersion
		res       clusterResult
		resync    string
		want      typesv1beta1.Resolution
		wantStart metav1.Time
		wantState typesv1beta1.DriftState
		wantBy    []string
	}{
		{"an Alert drift resynced", edited, healedNow(), "2026-12-02T06:01", typesv1beta1.ResolvedByResync, t0, typesv1beta1.ModifiedOutOfBand, []string{"kubectl-edit"}},
		{"an Enforce drift healed in the sync that found it", inSyncBefore, healedNow(), "", typesv1beta1.ResolvedByEnforce, metav1.NewTime(t0.Add(30 * time.Second)), typesv1beta1.ModifiedOutOfBand, []string{"kubectl-edit"}},
		{"an edit undone in the member", edited, inSync("a", memberCopy("9", 2, "3", "2")), "", typesv1beta1.ResolvedByReturn, t0, typesv1beta1.ModifiedOutOfBand, []string{"hand-edit"}},
		{"an edit the template took in", edited, written(), "", typesv1beta1.ResolvedByTemplateChange, t0, typesv1beta1.ModifiedOutOfBand, []string{"hand-edit"}},
		{"a cluster back from an outage, caught up", offline, written(), "", typesv1beta1.ResolvedByEnforce, t0, typesv1beta1.Unreachable, nil},
		{"a cluster back from an outage, current as it was", typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.Unreachable, DriftedSince: &t0, TemplateVersion: "3", OverrideVersion: "2"}, inSync("a", memberCopy("9", 2, "3", "2")), "", typesv1beta1.ResolvedByReturn, t0, typesv1beta1.Unreachable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, ended := endedEpisode(tt.prev, tt.res, v, tt.resync, now)
			if !ended {
				t.Fatal("no episode ended")
			}
			if ep.ResolvedBy != tt.want || ep.Resync != tt.resync || !ep.Start.Equal(&tt.wantStart) || !ep.End.Equal(&now) || ep.State != tt.wantState || !slices.Equal(ep.ChangedBy, tt.wantBy) {
				t.Errorf("episode = %+v; want resolvedBy %s, resync %q, start %v, state %s, changedBy %v", ep, tt.want, tt.resync, tt.wantStart, tt.wantState, tt.wantBy)
			}
			if ep.Before.TemplateVersion != tt.prev.TemplateVersion || ep.After != (typesv1beta1.EpisodeVersions{TemplateVersion: "3", OverrideVersion: "2"}) {
				t.Errorf("versions before %+v, after %+v", ep.Before, ep.After)
			}
		})
	}
	for name, c := range map[string]struct {
		prev typesv1beta1.ClusterVersion
		res  clusterResult
	}{
		"still drifted":      {edited, reported("a", Decision{State: typesv1beta1.ModifiedOutOfBand}, memberCopy("9", 2, "3", "2"), drift.Policy{Remediation: typesv1beta1.RemediationAlert})},
		"in sync as it was":  {inSyncBefore, inSync("a", memberCopy("9", 2, "3", "2"))},
		"a first sync":       {typesv1beta1.ClusterVersion{}, written()},
		"gone offline":       {inSyncBefore, unreachable("a", "cluster a is not Ready")},
		"drifted, then down": {edited, unreachable("a", "cluster a is not Ready")},
	} {
		if ep, ended := endedEpisode(c.prev, c.res, v, "", now); ended {
			t.Errorf("%s: ended episode %+v", name, ep)
		}
	}
}

// Who changed what, and how: the entry of a drift left as it is records
// each manager's operation and paths, and its episode keeps them when it
// ends; a drift healed in the sync that found it records them from what
// that sync found.
func TestEpisodeOperations(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	v := render.Versions{Template: "1", Override: "1"}
	update, apply := metav1.ManagedFieldsOperationUpdate, metav1.ManagedFieldsOperationApply
	changes := []drift.Change{
		{Path: "/metadata/labels/app"},
		{Path: "/spec/replicas", Manager: "kube-controller-manager", Operation: update},
		{Path: "/spec/template/spec/containers/0/image", Manager: "kubectl", Operation: apply},
	}
	want := []typesv1beta1.ManagerOperation{
		{Manager: "kube-controller-manager", Operation: update, Paths: []string{"/spec/replicas"}},
		{Manager: "kubectl", Operation: apply, Paths: []string{"/spec/template/spec/containers/0/image"}},
	}
	alert := drift.Policy{Remediation: typesv1beta1.RemediationAlert}
	left := clusterVersion(typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync},
		reported("a", Decision{State: typesv1beta1.ModifiedOutOfBand, Changes: changes}, memberCopy("7", 2, "1", "1"), alert), v, "", t0)
	if !reflect.DeepEqual(left.ChangedByOperations, want) || !slices.Equal(left.ChangedBy, []string{"kube-controller-manager", "kubectl"}) {
		t.Errorf("the entry of a drift left as it is: changedBy %v, changedByOperations %+v; want %+v", left.ChangedBy, left.ChangedByOperations, want)
	}
	back := clusterVersion(left, inSync("a", memberCopy("8", 2, "1", "1")), v, "", metav1.NewTime(t0.Add(time.Minute)))
	if n := len(back.DriftHistory); n != 1 || !reflect.DeepEqual(back.DriftHistory[0].ChangedByOperations, want) || back.ChangedByOperations != nil {
		t.Errorf("back in sync: entry's changedByOperations %+v, ledger %+v; want the episode to keep %+v", back.ChangedByOperations, back.DriftHistory, want)
	}
	healed := inSync("a", memberCopy("9", 2, "1", "1"))
	healed.written = true
	healed.healed = finding{state: typesv1beta1.ModifiedOutOfBand, changes: changes}
	ep, ended := endedEpisode(typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync}, healed, v, "", t0)
	if !ended || !reflect.DeepEqual(ep.ChangedByOperations, want) {
		t.Errorf("a drift healed in the sync that found it: episode %+v; want changedByOperations %+v", ep, want)
	}
}

// The ledger keeps the last MaxDriftEpisodes episodes, oldest first, and
// a sync that ends none carries it as it is.
func TestDriftHistoryIsBounded(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	v := render.Versions{Template: "1", Override: "1"}
	cv := typesv1beta1.ClusterVersion{ClusterName: "a", State: typesv1beta1.InSync}
	for i := range 2 * typesv1beta1.MaxDriftEpisodes {
		since := metav1.NewTime(t0.Add(time.Duration(2*i) * time.Minute))
		out := clusterVersion(cv, reported("a", Decision{State: typesv1beta1.Missing}, nil, drift.Policy{Remediation: typesv1beta1.RemediationAlert}), v, "", since)
		back := inSync("a", memberCopy(fmt.Sprint(i), 1, "1", "1"))
		back.written = true
		cv = clusterVersion(out, back, v, fmt.Sprint("resync-", i), metav1.NewTime(since.Add(time.Minute)))
	}
	if len(cv.DriftHistory) != typesv1beta1.MaxDriftEpisodes {
		t.Fatalf("%d episodes kept; want %d", len(cv.DriftHistory), typesv1beta1.MaxDriftEpisodes)
	}
	first, last := cv.DriftHistory[0], cv.DriftHistory[len(cv.DriftHistory)-1]
	if first.Resync != "resync-10" || last.Resync != "resync-19" || last.State != typesv1beta1.Missing || last.End.Sub(last.Start.Time) != time.Minute {
		t.Errorf("kept %+v … %+v; want the last ten, oldest first", first, last)
	}
	again := clusterVersion(cv, inSync("a", memberCopy("20", 1, "1", "1")), v, "", metav1.NewTime(t0.Add(time.Hour)))
	if len(again.DriftHistory) != len(cv.DriftHistory) {
		t.Errorf("a sync in sync changed the ledger: %d episodes, was %d", len(again.DriftHistory), len(cv.DriftHistory))
	}
}

// An agent's episodes whose write failed are kept for the next write, at
// most MaxDriftEpisodes of them, and an episode the history has already
// (a write that landed though it reported an error) is not added twice.
func TestUnsentEpisodes(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC))
	episode := func(i int) typesv1beta1.DriftEpisode {
		at := metav1.NewTime(t0.Add(time.Duration(i) * time.Minute))
		return typesv1beta1.DriftEpisode{Start: at, End: at, State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByEnforce}
	}
	key := types.NamespacedName{Namespace: "shop", Name: "web-configmaps"}
	var u unsentEpisodes
	if got := u.take(key); got != nil {
		t.Fatalf("nothing kept, took %v", got)
	}
	var many []typesv1beta1.DriftEpisode
	for i := range typesv1beta1.MaxDriftEpisodes + 3 {
		many = append(many, episode(i))
	}
	u.keep(key, "pull-1", many)
	u.keep(key, "push-1", many[:1])
	taken := u.take(key)
	kept := taken["pull-1"]
	if len(kept) != typesv1beta1.MaxDriftEpisodes || !kept[0].Start.Equal(&many[3].Start) {
		t.Fatalf("kept %d episodes from %v, want the newest %d", len(kept), kept[0].Start, typesv1beta1.MaxDriftEpisodes)
	}
	if len(taken["push-1"]) != 1 {
		t.Errorf("push-1's episodes: %d, want 1, kept apart from pull-1's", len(taken["push-1"]))
	}
	if got := u.take(key); got != nil {
		t.Errorf("take forgets: took %d clusters' episodes again", len(got))
	}
	history := []typesv1beta1.DriftEpisode{episode(0), episode(1)}
	got := withUnsent(history, []typesv1beta1.DriftEpisode{episode(1), episode(2)})
	if want := []typesv1beta1.DriftEpisode{episode(0), episode(1), episode(2)}; !slices.EqualFunc(got, want, func(a, b typesv1beta1.DriftEpisode) bool { return a.Start.Equal(&b.Start) }) {
		t.Errorf("history with the unsent: %d episodes, want %d (no episode twice)", len(got), len(want))
	}
	if len(history) != 2 {
		t.Errorf("the history given was changed: %d episodes", len(history))
	}
}
