package propagation

import (
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/capacity"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
)

// A new resource's first decision raises an Event only when it tells more
// than "placed where the placement says".
func TestNewsworthy(t *testing.T) {
	ruledOut := func(plugin string) targets {
		return targets{decision: framework.Decision{RuledOut: []framework.Verdict{{Cluster: "c", Plugin: plugin, Reasons: []string{"r"}}}}}
	}
	tests := []struct {
		name   string
		t      targets
		ok     bool
		reason string
		want   bool
	}{
		{name: "placed as written", t: targets{}, ok: true, reason: typesv1beta1.ReasonScheduled, want: false},
		{name: "clusters the placement leaves out", t: ruledOut(clusteraffinity.Name), ok: true, reason: typesv1beta1.ReasonScheduled, want: false},
		{name: "a full cluster ruled out", t: ruledOut(capacity.Name), ok: true, reason: typesv1beta1.ReasonScheduled, want: true},
		{name: "a note", t: targets{decision: framework.Decision{Notes: []framework.Verdict{{Plugin: "ReplicaDivision"}}}}, ok: true, reason: typesv1beta1.ReasonScheduled, want: true},
		{name: "copies kept", t: targets{}, ok: true, reason: typesv1beta1.ReasonCopiesKept, want: true},
		{name: "unschedulable", t: targets{}, ok: false, reason: typesv1beta1.ReasonUnschedulable, want: true},
	}
	for _, tt := range tests {
		if got := newsworthy(tt.t, tt.ok, tt.reason); got != tt.want {
			t.Errorf("%s: newsworthy = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// A later decision raises an Event when its outcome or reason changes, or
// it tells something a plugin found; not when a cluster joined or left
// elsewhere in the fleet only re-words the clusters the placement leaves
// out.
func TestWorthAnEvent(t *testing.T) {
	decision := func(clusters []string, ruledOut map[string]string) targets {
		d := framework.Decision{}
		for _, c := range clusters {
			d.Clusters = append(d.Clusters, framework.Placement{Name: c})
		}
		for _, c := range slices.Sorted(maps.Keys(ruledOut)) {
			d.RuledOut = append(d.RuledOut, framework.Verdict{Cluster: c, Plugin: ruledOut[c], Reasons: []string{"the placement leaves it out"}})
		}
		return targets{decision: d}
	}
	condition := func(tg targets) *metav1.Condition {
		_, reason, msg := scheduledCondition(tg)
		return &metav1.Condition{Type: typesv1beta1.FederatedScheduled, Reason: reason, Message: msg}
	}
	failed := func(tg targets) targets {
		tg.decision.Failure = &framework.Verdict{Plugin: "ReplicaDivision", Reasons: []string{"6 replicas cannot be divided"}}
		tg.names = []string{"a", "b"}
		return tg
	}
	aff := clusteraffinity.Name
	before := decision([]string{"a", "b"}, map[string]string{"c": aff})
	full := decision([]string{"a"}, map[string]string{"b": capacity.Name, "c": aff})
	tests := []struct {
		name string
		old  *metav1.Condition
		now  targets
		want bool
	}{
		{name: "a cluster joined that the placement leaves out", old: condition(before), now: decision([]string{"a", "b"}, map[string]string{"c": aff, "d": aff}), want: false},
		{name: "a cluster the placement left out unjoined", old: condition(before), now: decision([]string{"a", "b"}, nil), want: false},
		{name: "a new cluster selected", old: condition(before), now: decision([]string{"a", "b", "c"}, nil), want: true},
		{name: "a cluster no longer selected", old: condition(before), now: decision([]string{"a"}, map[string]string{"b": aff, "c": aff}), want: true},
		{name: "a full cluster ruled out", old: condition(before), now: decision([]string{"a"}, map[string]string{"b": capacity.Name, "c": aff}), want: true},
		{name: "replicas divided otherwise", old: condition(before), now: func() targets {
			tg := decision([]string{"a", "b"}, map[string]string{"c": aff})
			tg.decision.Clusters[0].Replicas = new(int32(2))
			return tg
		}(), want: true},
		{name: "a first plain decision", old: nil, now: before, want: false},
		{name: "a cluster joined that an unschedulable resource leaves out", old: condition(failed(before)), now: failed(decision([]string{"a", "b"}, map[string]string{"c": aff, "d": aff})), want: false},
		{name: "a cluster joined that a full resource leaves out", old: condition(full), now: decision([]string{"a"}, map[string]string{"b": capacity.Name, "c": aff, "d": aff}), want: false},
		{name: "a resource becomes unschedulable", old: condition(before), now: failed(before), want: true},
		{name: "the failure changes", old: condition(failed(before)), now: func() targets {
			tg := failed(before)
			tg.decision.Failure = &framework.Verdict{Plugin: "ReplicaDivision", Reasons: []string{"the weights add up to 0"}}
			return tg
		}(), want: true},
	}
	for _, tt := range tests {
		ok, reason, msg := scheduledCondition(tt.now)
		if got := worthAnEvent(tt.old, tt.now, ok, reason, msg); got != tt.want {
			t.Errorf("%s: worthAnEvent = %v, want %v (now %q)", tt.name, got, tt.want, msg)
		}
	}
}
