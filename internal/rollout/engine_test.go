package rollout

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var t0 = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

// twoWaves: a and b in canary (bake 30s), c and d in the implicit rest.
func twoWaves(mutate ...func(*typesv1beta1.Rollout)) (typesv1beta1.Rollout, []Wave) {
	spec := typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutWaves, Waves: []typesv1beta1.Wave{{Name: "canary", Clusters: []typesv1beta1.ClusterName{"a", "b"}, BakeSeconds: 30}}}
	for _, m := range mutate {
		m(&spec)
	}
	waves, err := Waves(&spec, []string{"a", "b", "c", "d"}, nil)
	if err != nil {
		panic(err)
	}
	return spec, waves
}

// at is every cluster targeting revision r, InSync and Healthy.
func at(r typesv1beta1.Revision) map[string]Cluster {
	out := map[string]Cluster{}
	for _, n := range []string{"a", "b", "c", "d"} {
		out[n] = Cluster{Target: r, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
	}
	return out
}

func wantTargets(t *testing.T, d Decision, want map[string]typesv1beta1.Revision) {
	t.Helper()
	for name, r := range want {
		if d.Targets[name] != r {
			t.Errorf("target of %s = %d, want %d (all: %v; waves %+v)", name, d.Targets[name], r, d.Targets, d.Status.Waves)
		}
	}
}

// A new revision goes to the first wave only; once its clusters are
// Healthy and InSync at it and have baked, the next wave starts; the
// second wave stays at the revision it had until then.
func TestWavesAdvance(t *testing.T) {
	spec, waves := twoWaves()
	prev := &typesv1beta1.RolloutStatus{Revision: 1}
	in := Input{Spec: spec, Latest: 2, Previous: prev, Waves: waves, Clusters: at(1), Now: t0}
	d := Decide(in)
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 2, "c": 1, "d": 1})
	if d.Status.FromRevision != 1 || d.Status.Waves[0].Phase != typesv1beta1.WaveProgressing || len(d.Started) != 1 || d.Complete || d.Requeue == 0 {
		t.Fatalf("first decision %+v", d)
	}

	// The canary clusters are at 2, Healthy: the wave bakes.
	clusters := at(1)
	clusters["a"], clusters["b"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}, Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
	in.Previous, in.Clusters, in.Now = &d.Status, clusters, t0.Add(10*time.Second)
	d = Decide(in)
	if d.Status.Waves[0].Phase != typesv1beta1.WaveBaking || d.Targets["c"] != 1 {
		t.Fatalf("after the canary is healthy: %+v targets %v", d.Status.Waves, d.Targets)
	}
	// Baked: the rest starts.
	in.Previous, in.Now = &d.Status, t0.Add(41*time.Second)
	d = Decide(in)
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 2, "c": 2, "d": 2})
	if d.Status.Waves[0].Phase != typesv1beta1.WaveComplete || d.Status.Waves[1].Phase != typesv1beta1.WaveProgressing || len(d.Started) != 1 {
		t.Fatalf("after the bake: %+v", d.Status.Waves)
	}
	// All at 2: complete.
	in.Previous, in.Clusters = &d.Status, at(2)
	if d = Decide(in); !d.Complete || d.Halt != nil {
		t.Fatalf("with every cluster at 2: %+v", d)
	}
}

// A cluster Degraded at the new revision halts the rollout: the clusters
// of later waves stay where they are, the halted wave's keep the new
// revision (undo is the user's call), and the halt holds on later syncs.
func TestDegradedHalts(t *testing.T) {
	spec, waves := twoWaves()
	clusters := at(1)
	clusters["a"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthDegraded, HealthReason: "ProgressDeadlineExceeded"}
	clusters["b"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthProgressing}
	prev := &typesv1beta1.RolloutStatus{Revision: 2, FromRevision: 1, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveProgressing, StartedAt: &metav1.Time{Time: t0}}, {Name: "rest", Phase: typesv1beta1.WavePending}}}
	in := Input{Spec: spec, Latest: 2, Previous: prev, Waves: waves, Clusters: clusters, Now: t0.Add(DegradedGrace - time.Second)}
	d := Decide(in)
	if d.Halt != nil || d.Targets["c"] != 1 {
		t.Fatalf("a cluster Degraded within DegradedGrace of its wave's start halted it, or the rollout went on: %+v", d)
	}
	in.Now = t0.Add(time.Minute)
	d = Decide(in)
	if d.Halt == nil || d.Halt.Reason != typesv1beta1.ReasonClusterDegraded || !strings.Contains(d.Halt.Message, "cluster a is Degraded at revision 2 (ProgressDeadlineExceeded)") {
		t.Fatalf("halt = %+v", d.Halt)
	}
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 2, "c": 1, "d": 1})
	in.Previous, in.Clusters = &d.Status, at(1)
	in.Clusters["a"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
	if d = Decide(in); d.Halt == nil || d.Targets["c"] != 1 {
		t.Errorf("a halted rollout went on once the cluster recovered: %+v", d)
	}
}

// A wave past its progress deadline halts.
func TestDeadlineHalts(t *testing.T) {
	spec, waves := twoWaves(func(r *typesv1beta1.Rollout) { r.ProgressDeadlineSeconds = new(int32(60)) })
	clusters := at(1)
	clusters["a"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthProgressing}
	prev := &typesv1beta1.RolloutStatus{Revision: 2, FromRevision: 1, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveProgressing, StartedAt: &metav1.Time{Time: t0}}, {Name: "rest", Phase: typesv1beta1.WavePending}}}
	d := Decide(Input{Spec: spec, Latest: 2, Previous: prev, Waves: waves, Clusters: clusters, Now: t0.Add(61 * time.Second)})
	if d.Halt == nil || d.Halt.Reason != typesv1beta1.ReasonDeadlineExceeded || d.Targets["c"] != 1 {
		t.Fatalf("decision %+v", d)
	}
}

// A wave with pause waits for its approval, given for this revision and
// wave; spec.rollout.paused holds every wave.
func TestPauses(t *testing.T) {
	spec, waves := twoWaves(func(r *typesv1beta1.Rollout) { r.Waves[0].Pause = true })
	in := Input{Spec: spec, Latest: 2, Previous: &typesv1beta1.RolloutStatus{Revision: 1}, Waves: waves, Clusters: at(1), Now: t0}
	d := Decide(in)
	if d.Status.Waves[0].Phase != typesv1beta1.WaveAwaitingApproval || d.Targets["a"] != 1 {
		t.Fatalf("a paused wave: %+v targets %v", d.Status.Waves, d.Targets)
	}
	in.Previous, in.ApproveWave = &d.Status, "1/0" // another revision's approval
	if d = Decide(in); d.Targets["a"] != 1 {
		t.Errorf("approved by another revision's approval")
	}
	in.ApproveWave = "2/0"
	if d = Decide(in); d.Targets["a"] != 2 || d.Status.Waves[0].Phase != typesv1beta1.WaveProgressing {
		t.Errorf("approved wave: %+v", d.Status.Waves)
	}

	spec.Waves[0].Pause, spec.Paused = false, true
	d = Decide(Input{Spec: spec, Latest: 2, Previous: &typesv1beta1.RolloutStatus{Revision: 1}, Waves: waves, Clusters: at(1), Now: t0})
	if d.Targets["a"] != 1 || d.Complete {
		t.Errorf("paused rollout moved a cluster: %v", d.Targets)
	}
}

// maxUnavailable bounds the clusters of a wave updated at once.
func TestMaxUnavailable(t *testing.T) {
	spec, waves := twoWaves(func(r *typesv1beta1.Rollout) { r.Waves[0].MaxUnavailable = new(int32(1)) })
	in := Input{Spec: spec, Latest: 2, Previous: &typesv1beta1.RolloutStatus{Revision: 1}, Waves: waves, Clusters: at(1), Now: t0}
	d := Decide(in)
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 1})
	in.Previous = &d.Status
	in.Clusters["a"] = Cluster{Target: 2, State: typesv1beta1.InSync, Health: corev1beta1.HealthHealthy}
	d = Decide(in)
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 2, "c": 1})
}

// A first revision, all-at-once, and clusters the change leaves as they
// are take the latest at once; an override change rolls only where it
// changes something.
func TestAtOnce(t *testing.T) {
	spec, waves := twoWaves()
	clusters := map[string]Cluster{"a": {}, "b": {}, "c": {}, "d": {}}
	if d := Decide(Input{Spec: spec, Latest: 1, Waves: waves, Clusters: clusters, Now: t0}); !d.Complete || d.Targets["d"] != 1 {
		t.Errorf("first revision: %+v", d)
	}
	if d := Decide(Input{Spec: spec, Latest: 2, Previous: &typesv1beta1.RolloutStatus{Revision: 1}, Waves: waves, Clusters: at(1), AllAtOnce: "2", Now: t0}); !d.Complete || d.Targets["d"] != 2 {
		t.Errorf("all at once: %+v", d)
	}
	clusters = at(1)
	for _, n := range []string{"a", "b", "d"} {
		c := clusters[n]
		c.Unchanged = true
		clusters[n] = c
	}
	d := Decide(Input{Spec: spec, Latest: 2, Previous: &typesv1beta1.RolloutStatus{Revision: 1}, Waves: waves, Clusters: clusters, Now: t0})
	// The canary wave changes nothing: complete without its bake; c, the
	// only cluster the change reaches, starts.
	wantTargets(t, d, map[string]typesv1beta1.Revision{"a": 2, "b": 2, "c": 2, "d": 2})
	if d.Status.Waves[0].Phase != typesv1beta1.WaveComplete || d.Status.Waves[1].Phase != typesv1beta1.WaveProgressing {
		t.Errorf("waves %+v", d.Status.Waves)
	}
}

// Waves choose clusters by name, then by label; the rest go last; a
// cluster is in its first wave only.
func TestWavesAssignment(t *testing.T) {
	spec := &typesv1beta1.Rollout{Waves: []typesv1beta1.Wave{
		{Clusters: []typesv1beta1.ClusterName{"b"}},
		{ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "prod"}}},
	}}
	clusters := []corev1beta1.FederatedCluster{{}, {}, {}}
	clusters[0].Name, clusters[0].Labels = "a", map[string]string{"tier": "prod"}
	clusters[1].Name, clusters[1].Labels = "b", map[string]string{"tier": "prod"}
	clusters[2].Name = "c"
	waves, err := Waves(spec, []string{"c", "b", "a"}, clusters)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, w := range waves {
		got = append(got, w.Name+"="+strings.Join(w.Clusters, ","))
	}
	if strings.Join(got, " ") != "wave-0=b wave-1=a rest=c" {
		t.Errorf("waves %q", got)
	}
	spec.Waves[1].ClusterSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Bogus"}}
	if _, err := Waves(spec, []string{"a"}, clusters); err == nil || !strings.Contains(err.Error(), "spec.rollout.waves[1].clusterSelector") {
		t.Errorf("bad selector: %v", err)
	}
}

// A revision's content reads back with integers as int64, as the
// resource's own unstructured object has them: a held revision renders
// exactly as the resource did.
func TestRevisionContentKeepsIntegers(t *testing.T) {
	cr := &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(`{"template":{"spec":{"replicas":3,"progressDeadlineSeconds":15}},"overrides":[{"clusterName":"a","clusterOverrides":[{"path":"/spec/replicas","value":2}]}]}`)}}
	r, err := fromControllerRevision(cr)
	if err != nil {
		t.Fatal(err)
	}
	spec := r.Template["spec"].(map[string]any)
	if _, ok := spec["replicas"].(int64); !ok {
		t.Errorf("replicas decoded as %T, want int64", spec["replicas"])
	}
	o := r.Overrides[0].(map[string]any)["clusterOverrides"].([]any)[0].(map[string]any)
	if _, ok := o["value"].(int64); !ok {
		t.Errorf("an override's value decoded as %T, want int64", o["value"])
	}
}

// A wave in progress whose status lacks startedAt (written by hand) is
// taken as started now, not a crash.
func TestWaveWithoutStart(t *testing.T) {
	spec, waves := twoWaves()
	prev := &typesv1beta1.RolloutStatus{Revision: 2, FromRevision: 1, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveProgressing}, {Name: "rest", Phase: typesv1beta1.WavePending}}}
	d := Decide(Input{Spec: spec, Latest: 2, Previous: prev, Waves: waves, Clusters: at(1), Now: t0})
	if d.Status.Waves[0].StartedAt == nil || d.Halt != nil || d.Targets["a"] != 2 {
		t.Errorf("decision %+v", d)
	}
}
