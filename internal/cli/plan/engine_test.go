package plan

import (
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/planreport"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// twoWaveInput is the engine's input for a resource on a, b and c in two
// waves, canary (a and c) and main (b), at revision latest, whose rollout
// of revision 1 is complete; every cluster InSync and Healthy at 1.
func twoWaveInput(latest typesv1beta1.Revision, mutate ...func(*rollout.Input)) rollout.Input {
	spec := typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutWaves, Waves: []typesv1beta1.Wave{
		{Name: "canary", Clusters: []typesv1beta1.ClusterName{"a", "c"}},
		{Name: "main", Clusters: []typesv1beta1.ClusterName{"b"}},
	}}
	in := rollout.Input{
		Spec: spec, Latest: latest, Now: t0,
		Previous: &typesv1beta1.RolloutStatus{Revision: 1, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveComplete}, {Name: "main", Phase: typesv1beta1.WaveComplete}}},
		Clusters: map[string]rollout.Cluster{},
	}
	for _, name := range []string{"a", "b", "c"} {
		in.Clusters[name] = rollout.Cluster{Target: 1, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
	}
	for _, m := range mutate {
		m(&in)
	}
	waves, err := rollout.Waves(&in.Spec, []string{"a", "b", "c"}, nil)
	if err != nil {
		panic(err)
	}
	in.Waves = waves
	return in
}

// atRevision2 is revision 2's rollout under way: the canary wave started
// at t0 minus ago, its clusters InSync and Healthy at 2, main still at 1.
func atRevision2(canary typesv1beta1.WavePhase, ago time.Duration) func(*rollout.Input) {
	return func(in *rollout.Input) {
		started := metav1.NewTime(t0.Add(-ago))
		in.Previous = &typesv1beta1.RolloutStatus{Revision: 2, FromRevision: 1, Waves: []typesv1beta1.WaveStatus{
			{Name: "canary", Phase: canary, StartedAt: &started, HealthySince: &started}, {Name: "main", Phase: typesv1beta1.WavePending},
		}}
		for _, name := range []string{"a", "c"} {
			in.Clusters[name] = rollout.Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
		}
	}
}

// TestEngineTiming maps the engine's decision to each cluster's timing:
// now, or held at an earlier revision, and why.
func TestEngineTiming(t *testing.T) {
	t.Parallel()
	pauseMain := func(in *rollout.Input) { in.Spec.Waves[1].Pause = true }
	tests := []struct {
		name    string
		in      rollout.Input
		cluster string
		action  planreport.Action
		// oldContent: the write heals drift or acts on resync.
		oldContent bool
		pull       bool
		now, held  bool
		target     int64
		reason     string
	}{
		{name: "a first revision goes everywhere", cluster: "b", now: true, target: 1,
			in: twoWaveInput(1, func(in *rollout.Input) {
				in.Previous = nil
				in.Clusters["b"] = rollout.Cluster{}
			}),
			reason: "; gets revision 1 now: a first revision goes to every cluster at once"},
		{name: "the first wave starts", in: twoWaveInput(2), cluster: "a", now: true, target: 2,
			reason: "; gets revision 2 now: wave 1/2 canary starts"},
		{name: "the second wave waits for the first", in: twoWaveInput(2), cluster: "b", held: true, target: 1,
			reason: "; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: waiting for a, c to be Healthy and InSync at the revision"},
		{name: "the second wave waits for the first, then for an approval", in: twoWaveInput(2, pauseMain), cluster: "b", held: true, target: 1,
			reason: "; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: waiting for a, c to be Healthy and InSync at the revision; " +
				"then wave 2/2 main waits for an approval (fedwarden rollout resume)"},
		{name: "the first wave bakes", in: twoWaveInput(2, atRevision2(typesv1beta1.WaveBaking, 10*time.Second), func(in *rollout.Input) { in.Spec.Waves[0].BakeSeconds = 60 }),
			cluster: "b", held: true, target: 1,
			reason: "; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Baking: baking: every cluster Healthy and InSync; 50s to go"},
		{name: "a wave awaits approval", in: twoWaveInput(2, pauseMain, atRevision2(typesv1beta1.WaveComplete, time.Minute)), cluster: "b", held: true, target: 1,
			reason: "; held at revision 1: wave 2/2 main waits for an approval: fedwarden rollout resume starts it"},
		{name: "the approved wave starts",
			in:      twoWaveInput(2, pauseMain, atRevision2(typesv1beta1.WaveComplete, time.Minute), func(in *rollout.Input) { in.ApproveWave = "2/1" }),
			cluster: "b", now: true, target: 2, reason: "; gets revision 2 now: wave 2/2 main starts"},
		{name: "an approval of another revision does not count",
			in:      twoWaveInput(2, pauseMain, atRevision2(typesv1beta1.WaveComplete, time.Minute), func(in *rollout.Input) { in.ApproveWave = "1/1" }),
			cluster: "b", held: true, target: 1, reason: "; held at revision 1: wave 2/2 main waits for an approval: fedwarden rollout resume starts it"},
		{name: "paused", in: twoWaveInput(2, func(in *rollout.Input) { in.Spec.Paused = true }), cluster: "a", held: true, target: 1,
			reason: "; held at revision 1: the rollout is paused (spec.rollout.paused) at wave 1/2 canary: fedwarden rollout resume lets it go on"},
		{name: "halted", cluster: "b", held: true, target: 1,
			in: twoWaveInput(2, atRevision2(typesv1beta1.WaveProgressing, time.Minute), func(in *rollout.Input) {
				in.Clusters["c"] = rollout.Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthDegraded, HealthReason: "ProgressDeadlineExceeded"}
			}),
			reason: "; held at revision 1: the rollout of revision 2 halted at wave 1/2 canary (ClusterDegraded): cluster c is Degraded at revision 2 (ProgressDeadlineExceeded); " +
				"a new change of the template or overrides, or fedwarden rollout undo, starts a new rollout"},
		{name: "maxUnavailable", cluster: "c", held: true, target: 1,
			in:     twoWaveInput(2, func(in *rollout.Input) { in.Spec.Waves[0].MaxUnavailable = new(int32(1)) }),
			reason: "; held at revision 1: wave 1/2 canary updates 1 of its clusters at a time (maxUnavailable), waiting for a, c to be Healthy and InSync at the revision"},
		{name: "all at once", in: twoWaveInput(2, func(in *rollout.Input) { in.AllAtOnce = "2" }), cluster: "b", now: true, target: 2,
			reason: "; gets revision 2 now: fedwarden.io/rollout-all-at-once: 2 skips the waves"},
		{name: "a copy the revision does not change", cluster: "b", now: true, target: 2,
			in: twoWaveInput(2, func(in *rollout.Input) {
				in.Clusters["b"] = rollout.Cluster{Target: 1, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy, Unchanged: true}
			}),
			reason: "; gets revision 2 now, wherever its wave is: its copy is the same as at revision 1"},
		{name: "a Pull cluster waits for its wave as any", cluster: "b", pull: true, held: true, target: 1,
			in:     twoWaveInput(2),
			reason: "; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: waiting for a, c to be Healthy and InSync at the revision"},
		{name: "a cluster that targets the revision already", cluster: "a", now: true, target: 2,
			in:     twoWaveInput(2, atRevision2(typesv1beta1.WaveProgressing, time.Second)),
			reason: "; gets revision 2 now: its CPV entry targets it already"},
		{name: "a held cluster without a copy", action: planreport.ActionCreate, cluster: "b", held: true, target: 1,
			in: twoWaveInput(2, func(in *rollout.Input) { in.Clusters["b"] = rollout.Cluster{} }),
			reason: "; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: waiting for a, c to be Healthy and InSync at the revision; " +
				"until then the controller creates its copy at revision 1"},
		{name: "drift healed at the held revision", in: twoWaveInput(2), cluster: "b", oldContent: true, now: true, held: true, target: 1},
		{name: "nothing written", in: twoWaveInput(2), cluster: "b", action: planreport.ActionUnchanged, held: true, target: 1},
		{name: "a deletion", in: twoWaveInput(2), cluster: "b", action: planreport.ActionDelete, now: true, held: true, target: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(tt.in, true, kept(tt.in.Latest))
			action := tt.action
			if action == "" {
				action = planreport.ActionUpdate
			}
			c := planreport.Cluster{Name: tt.cluster, Placed: true, Pull: tt.pull, Action: action, Reason: "why"}
			e.timing(&c, !tt.oldContent)
			if c.Now != tt.now || c.Held != tt.held || c.TargetRevision != tt.target || c.Reason != "why"+tt.reason {
				t.Errorf("timing: now %t, held %t, target %d, reason %q;\nwant now %t, held %t, target %d, reason %q\n(decision %+v)",
					c.Now, c.Held, c.TargetRevision, c.Reason, tt.now, tt.held, tt.target, "why"+tt.reason, e.Decision)
			}
		})
	}
}

// TestEngineTimingLeavesUnplacedClusters: a cluster the resource leaves is
// not the engine's: its deletion is made now, with no revision.
func TestEngineTimingLeavesUnplacedClusters(t *testing.T) {
	t.Parallel()
	c := planreport.Cluster{Name: "gone", Action: planreport.ActionDelete, Reason: "why"}
	newEngine(twoWaveInput(2), true, kept(2)).timing(&c, false)
	if !c.Now || c.Held || c.TargetRevision != 0 || c.Reason != "why" {
		t.Errorf("timing of a removal: %+v", c)
	}
}

// TestEngineSummary: the resource's rollout summary says where the
// decision leaves the rollout.
func TestEngineSummary(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		in            rollout.Input
		newRevision   bool
		from          int64
		phases        string
		complete      bool
		halt          string
		progress      string
		progressWants string
	}{
		{name: "first wave started", in: twoWaveInput(2), newRevision: true, from: 1, phases: "Progressing Pending",
			progress: "revision 2 from 1: wave canary is Progressing: waiting for a, c to be Healthy and InSync at the revision"},
		{name: "awaiting approval", in: twoWaveInput(2, func(in *rollout.Input) { in.Spec.Waves[1].Pause = true }, atRevision2(typesv1beta1.WaveComplete, time.Minute)),
			from: 1, phases: "Complete AwaitingApproval", progress: "revision 2 from 1: wave main is AwaitingApproval: the wave waits for an approval: fedwarden rollout resume"},
		{name: "halted", from: 1, phases: "Halted Pending", halt: "ClusterDegraded",
			in: twoWaveInput(2, atRevision2(typesv1beta1.WaveProgressing, time.Minute), func(in *rollout.Input) {
				in.Clusters["a"] = rollout.Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthDegraded, HealthReason: "CrashLoop"}
			}),
			progress: "cluster a is Degraded at revision 2 (CrashLoop)"},
		{name: "rolled out", in: twoWaveInput(1), phases: "Complete Complete", complete: true, progress: "every placed cluster targets revision 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ro := planreport.Rollout{Waves: []planreport.Wave{{Name: "canary"}, {Name: "main"}}}
			newEngine(tt.in, tt.newRevision, kept(tt.in.Latest)).summarize(&ro)
			phases := ro.Waves[0].Phase + " " + ro.Waves[1].Phase
			halt := ""
			if ro.Halted != nil {
				halt = ro.Halted.Reason
			}
			if !ro.Engine || ro.Revision != int64(tt.in.Latest) || ro.NewRevision != tt.newRevision || ro.FromRevision != tt.from || phases != tt.phases ||
				ro.Complete != tt.complete || halt != tt.halt || ro.Progress != tt.progress {
				t.Errorf("summary %+v (phases %s)", ro, phases)
			}
		})
	}
}

// newEngine is the engine's decision on in, with revs kept; newRevision
// says whether in.Latest is a revision the planned change makes.
func newEngine(in rollout.Input, newRevision bool, revs []rollout.Revision) *engine {
	return &engine{RolloutDecision: propagation.RolloutDecision{Revisions: revs, Input: in, Decision: rollout.Decide(in)}, newRevision: newRevision}
}

// kept are revisions 1 to latest, all kept.
func kept(latest typesv1beta1.Revision) []rollout.Revision {
	var revs []rollout.Revision
	for n := typesv1beta1.Revision(1); n <= latest; n++ {
		revs = append(revs, rollout.Revision{Number: n})
	}
	return revs
}

// A cluster the engine holds at a revision that is not kept any more (an
// undo renumbered it as the latest) is synced to the latest, as the
// controller syncs it (rollout.Decision.Effective).
func TestEngineTimingOfARevisionNotKept(t *testing.T) {
	t.Parallel()
	c := planreport.Cluster{Name: "b", Placed: true, Action: planreport.ActionUnchanged}
	newEngine(twoWaveInput(2), true, kept(2)).timing(&c, false)
	if !c.Held || c.TargetRevision != 1 {
		t.Fatalf("with revision 1 kept: %+v, want b held at 1", c)
	}
	c = planreport.Cluster{Name: "b", Placed: true, Action: planreport.ActionUnchanged}
	newEngine(twoWaveInput(2), true, kept(2)[1:]).timing(&c, false)
	if c.Held || c.TargetRevision != 2 {
		t.Errorf("with revision 1 gone: %+v, want b at revision 2, not held", c)
	}
}
