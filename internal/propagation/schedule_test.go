package propagation

import (
	"testing"

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
