package propagation

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/drift"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/render"
)

// notifications records what recordDrift tells the drift notifier.
type notifications []notify.Transition

func (n *notifications) Notify(t notify.Transition) { *n = append(*n, t) }

// Each drift transition is told to the notifier once, with the state,
// paths and managers of the drift it is about, beside its Events.
func TestRecordDriftNotifies(t *testing.T) {
	t.Parallel()
	edit := []drift.Change{{Path: "/spec/replicas", Manager: "kubectl-edit"}}
	drifted := typesv1beta1.ClusterVersion{ClusterName: "east", State: typesv1beta1.ModifiedOutOfBand,
		ChangedPaths: []string{"/data/password"}, ChangedBy: []string{"kubectl"}, Remediation: typesv1beta1.RemediationAlert,
		TemplateVersion: "4", OverrideVersion: "2"}
	tests := []struct {
		name         string
		previous     typesv1beta1.ClusterVersion
		result       clusterResult
		wantKind     notify.Kind
		wantState    typesv1beta1.DriftState
		wantPaths    []string
		wantManagers []string
		wantRem      typesv1beta1.Remediation
		wantResolved typesv1beta1.Resolution
		wantEvents   []string
	}{
		{
			name:     "healed under Enforce",
			previous: typesv1beta1.ClusterVersion{State: typesv1beta1.InSync},
			result: clusterResult{name: "east", state: typesv1beta1.InSync, remediation: typesv1beta1.RemediationEnforce,
				healed: finding{state: typesv1beta1.ModifiedOutOfBand, changes: edit}, written: true},
			wantKind: notify.Healed, wantState: typesv1beta1.ModifiedOutOfBand, wantPaths: []string{"/spec/replicas"}, wantManagers: []string{"kubectl-edit"},
			wantRem: typesv1beta1.RemediationEnforce, wantResolved: typesv1beta1.ResolvedByEnforce, wantEvents: []string{"Warning DriftDetected", "Normal DriftResolved"},
		},
		{
			name:     "left under Alert",
			previous: typesv1beta1.ClusterVersion{State: typesv1beta1.InSync},
			result: clusterResult{name: "east", state: typesv1beta1.ModifiedOutOfBand, remediation: typesv1beta1.RemediationAlert,
				changes: edit, message: "changed"},
			wantKind: notify.Alerted, wantState: typesv1beta1.ModifiedOutOfBand, wantPaths: []string{"/spec/replicas"}, wantManagers: []string{"kubectl-edit"},
			wantRem: typesv1beta1.RemediationAlert, wantEvents: []string{"Warning DriftDetected"},
		},
		{
			name:     "detected, not left by a policy",
			previous: typesv1beta1.ClusterVersion{State: typesv1beta1.Unreachable},
			result:   clusterResult{name: "east", state: typesv1beta1.OutdatedTemplate, remediation: typesv1beta1.RemediationEnforce},
			wantKind: notify.Detected, wantState: typesv1beta1.OutdatedTemplate, wantPaths: nil, wantManagers: nil,
			wantRem: typesv1beta1.RemediationEnforce, wantEvents: []string{"Warning DriftDetected"},
		},
		{
			name:     "resolved: the drift that ended",
			previous: drifted,
			result:   clusterResult{name: "east", state: typesv1beta1.InSync},
			wantKind: notify.Resolved, wantState: typesv1beta1.ModifiedOutOfBand, wantPaths: []string{"/data/password"}, wantManagers: []string{"kubectl"},
			wantRem: typesv1beta1.RemediationAlert, wantResolved: typesv1beta1.ResolvedByReturn, wantEvents: []string{"Normal DriftResolved"},
		},
		{
			name:     "the same drift again",
			previous: drifted,
			result: clusterResult{name: "east", state: typesv1beta1.ModifiedOutOfBand, remediation: typesv1beta1.RemediationAlert,
				changes: []drift.Change{{Path: "/data/password", Manager: "kubectl"}}},
		},
		{
			name:     "in sync, and was",
			previous: typesv1beta1.ClusterVersion{State: typesv1beta1.InSync},
			result:   clusterResult{name: "east", state: typesv1beta1.InSync},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got notifications
			var evs events
			rep := &reporter{recorder: &evs, driftNotifier: &got, typ: Type{
				Federated: schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedSecret"}, FederatedResource: "federatedsecrets",
				Target: schema.GroupVersionKind{Version: "v1", Kind: "Secret"},
			}}
			fed := &unstructured.Unstructured{}
			fed.SetNamespace("shop")
			fed.SetName("db")
			in := &syncInput{previous: map[string]typesv1beta1.ClusterVersion{"east": tt.previous}, v: render.Versions{Template: "4", Override: "2"}}
			rep.recordDrift(fed, in, []clusterResult{tt.result})
			if tt.wantKind == "" {
				if len(got) > 0 || len(evs) > 0 {
					t.Errorf("notified %+v, Events %q; want none", got, evs)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("notified %+v, want one %s", got, tt.wantKind)
			}
			n := got[0]
			if n.Kind != tt.wantKind || n.State != tt.wantState || !slices.Equal(n.Paths, tt.wantPaths) || !slices.Equal(n.Managers, tt.wantManagers) || n.Remediation != tt.wantRem || n.ResolvedBy != tt.wantResolved {
				t.Errorf("notified %+v", n)
			}
			if n.Cluster != "east" || n.Namespace != "shop" || n.Name != "db" || n.Target.Kind != "Secret" || n.Resource != "federatedsecrets" ||
				n.TemplateVersion != "4" || n.OverrideVersion != "2" {
				t.Errorf("notified %+v", n)
			}
			if len(evs) != len(tt.wantEvents) {
				t.Fatalf("Events %q, want %q", evs, tt.wantEvents)
			}
			for i, want := range tt.wantEvents {
				if !strings.HasPrefix(evs[i], want) {
					t.Errorf("Event %q, want %q", evs[i], want)
				}
			}
		})
	}
}

// A Pull cluster's transitions are its agent's to tell.
func TestRecordDriftLeavesAgentsResults(t *testing.T) {
	t.Parallel()
	var got notifications
	rep := &reporter{driftNotifier: &got}
	in := &syncInput{previous: map[string]typesv1beta1.ClusterVersion{}}
	rep.recordDrift(&unstructured.Unstructured{}, in, []clusterResult{{name: "pull", fromAgent: true, state: typesv1beta1.Missing}})
	if len(got) != 0 {
		t.Errorf("notified %+v for a Pull cluster", got)
	}
}

// A waiver's life, as the ledger and the notifications see it: the sync
// that first waives an edit records the waiver in the entry and tells
// Waived; a later sync keeps when it started; the sync after its expiry
// tells WaiverExpired, then what the policy did (healed here), and the
// episode that ends takes the waiver into the ledger.
func TestWaiverLedgerAndNotifications(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC)
	expires := start.Add(time.Hour)
	edit := []drift.Change{{Path: "/spec/replicas", Manager: "kubectl-scale"}}
	waiver := &drift.Waiver{Paths: []string{"/spec/replicas"}, Expires: expires, Reason: "valve maintenance", Owner: "ops@example.com"}
	waived := clusterResult{name: "east", state: typesv1beta1.Waived, remediation: typesv1beta1.RemediationEnforce, changes: edit,
		message: "kept by a waiver", decided: true, decision: Decision{State: typesv1beta1.Waived, Waiver: waiver}}
	v := render.Versions{Template: "1", Override: "1"}

	var got notifications
	var evs events
	now := start
	rep := &reporter{recorder: &evs, driftNotifier: &got, now: func() time.Time { return now }, typ: Type{Target: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}}}
	sync := func(prev typesv1beta1.ClusterVersion, res clusterResult) typesv1beta1.ClusterVersion {
		rep.recordDrift(&unstructured.Unstructured{}, &syncInput{previous: map[string]typesv1beta1.ClusterVersion{"east": prev}, v: v}, []clusterResult{res})
		return clusterVersion(prev, res, v, "", metav1.NewTime(now))
	}

	first := sync(typesv1beta1.ClusterVersion{ClusterName: "east", State: typesv1beta1.InSync}, waived)
	if first.Waiver == nil || !first.Waiver.Since.Time.Equal(start) || !first.Waiver.Until.Time.Equal(expires) || first.Waiver.Reason != "valve maintenance" ||
		first.Waiver.Owner != "ops@example.com" || first.WaivedUntil == nil {
		t.Fatalf("the entry of the first waived sync: %+v, waiver %+v", first, first.Waiver)
	}
	if len(got) != 1 || got[0].Kind != notify.Waived || got[0].State != typesv1beta1.Waived || got[0].Message != "kept by a waiver" ||
		len(evs) != 1 || !strings.HasPrefix(evs[0], "Normal DriftWaived") {
		t.Fatalf("first waived sync: notified %+v, Events %q; want one Waived and a DriftWaived Event", got, evs)
	}

	now = start.Add(30 * time.Minute)
	again := sync(first, waived)
	if !again.Waiver.Since.Time.Equal(start) || len(got) != 1 {
		t.Errorf("a later waived sync: waiver %+v, %d notifications; want the first sync's start and nothing new", again.Waiver, len(got))
	}

	now = expires.Add(time.Second)
	healed := clusterResult{name: "east", state: typesv1beta1.InSync, remediation: typesv1beta1.RemediationEnforce, written: true,
		healed: finding{state: typesv1beta1.ModifiedOutOfBand, changes: edit}}
	end := sync(again, healed)
	if len(got) != 3 || got[1].Kind != notify.WaiverExpired || got[2].Kind != notify.Healed ||
		!strings.Contains(got[1].Message, "expired at "+expires.Format(time.RFC3339)+" (valve maintenance, ops@example.com)") {
		t.Fatalf("after the expiry: notified %+v; want WaiverExpired naming the waiver, then Healed", got)
	}
	if n := len(end.DriftHistory); n != 1 || end.Waiver != nil || end.DriftHistory[0].Waiver == nil || !end.DriftHistory[0].Waiver.Until.Time.Equal(expires) ||
		!end.DriftHistory[0].Waiver.Since.Time.Equal(start) || end.DriftHistory[0].ResolvedBy != typesv1beta1.ResolvedByEnforce {
		t.Errorf("the entry after the heal: %+v; want the episode in the ledger with its waiver, and none left on the entry", end)
	}

	// Under Alert the waiver stays on the entry after its expiry, while the
	// edit stays, so that the episode, when it ends, has it.
	alerted := clusterResult{name: "east", state: typesv1beta1.ModifiedOutOfBand, remediation: typesv1beta1.RemediationAlert, changes: edit}
	if after := sync(again, alerted); after.Waiver == nil || !after.Waiver.Since.Time.Equal(start) || after.WaivedUntil != nil {
		t.Errorf("the entry after the expiry under Alert: %+v; want the waiver kept, waivedUntil gone", after)
	}
}
