package propagation

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/render"
	"github.com/fedwarden/fedwarden/internal/rollout"
)

// A halt is told once: a Warning Event and a notification when the
// rollout halts, nothing more on the syncs that find it halted still; a
// wave that starts gets its Event.
func TestRecordRollout(t *testing.T) {
	t.Parallel()
	fed := &unstructured.Unstructured{}
	fed.SetNamespace("shop")
	fed.SetName("web")
	halted := rollout.Decision{
		Status: typesv1beta1.RolloutStatus{Revision: 3, Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveHalted}}},
		Halt:   &rollout.Halt{Reason: typesv1beta1.ReasonClusterDegraded, Message: "cluster a is Degraded at revision 3 (ProgressDeadlineExceeded)"},
	}
	var evs events
	var got notifications
	rep := &reporter{recorder: &evs, driftNotifier: &got}
	rep.recordRollout(fed, planOf(halted, &typesv1beta1.RolloutStatus{Revision: 3, Waves: []typesv1beta1.WaveStatus{{Phase: typesv1beta1.WaveProgressing}}}))
	if len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning RolloutHalted revision 3 halted: cluster a is Degraded") {
		t.Errorf("Events %q", evs)
	}
	if len(got) != 1 || got[0].Kind != notify.RolloutHalted || got[0].Name != "web" || !strings.Contains(got[0].Message, "cluster a is Degraded") {
		t.Errorf("notified %+v", got)
	}
	rep.recordRollout(fed, planOf(halted, &halted.Status))
	if len(evs) != 1 || len(got) != 1 {
		t.Errorf("a rollout halted still was told again: Events %q, notified %+v", evs, got)
	}
	rep.recordRollout(fed, planOf(rollout.Decision{Status: typesv1beta1.RolloutStatus{Revision: 4}, Started: []string{"canary"}}, nil))
	if len(evs) != 2 || evs[1] != "Normal WaveStarted revision 4: wave canary started" {
		t.Errorf("Events %q", evs)
	}
}

// planOf is the rollout plan of decision d, made on a rollout whose status
// was previous.
func planOf(d rollout.Decision, previous *typesv1beta1.RolloutStatus) *rolloutPlan {
	return &rolloutPlan{RolloutDecision: RolloutDecision{Decision: d, Input: rollout.Input{Previous: previous}}}
}

// A rollout in waves of Secrets is refused before anything is read or
// written (the store would keep the Secret's data in ControllerRevisions):
// the sync stops with an error that says why and what to do, and is not
// retried until the resource changes. Strategy All, or none, goes on.
func TestWavesOfSecretsAreRefused(t *testing.T) {
	secrets := &Reconciler{typ: Type{Target: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}}}
	waves := &syncState{spec: render.Spec{Rollout: &typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutWaves}}}
	err := secrets.planRollout(t.Context(), waves)
	if !errors.Is(err, reconcile.TerminalError(nil)) || !errors.Is(err, errWavesOfSecrets) {
		t.Fatalf("planRollout of Secrets in waves: %v, want the terminal %v", err, errWavesOfSecrets)
	}
	if msg := stoppedMessage(err); !strings.Contains(msg, "use strategy All") || !strings.Contains(msg, "synced again when it changes") {
		t.Errorf("the Propagated condition would say %q", msg)
	}
	for _, r := range []*typesv1beta1.Rollout{nil, {Strategy: typesv1beta1.RolloutAll}} {
		s := &syncState{spec: render.Spec{Rollout: r}}
		if err := secrets.planRollout(t.Context(), s); err != nil || s.rollout != nil {
			t.Errorf("rollout %+v of Secrets: %v, plan %v; want none", r, err, s.rollout)
		}
	}
	if (Type{Target: schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Secret"}}).holdsSecrets() {
		t.Error("a CRD of kind Secret in another group was taken for core Secrets")
	}
}

// TestRolloutInputClusters: the engine is told of each placed cluster what the
// controller tells it: a RolloutPending entry is in sync at its target; a
// cluster whose copy the planned content does not change (an override of
// another cluster) takes the latest at once; a Pull cluster is no
// exception either way (its agent applies the revision the CPV names).
func TestRolloutInputClusters(t *testing.T) {
	t.Parallel()
	const doc = `{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment", "metadata": {"name": "web", "namespace": "shop"},
		"spec": {"overrides": [{"clusterName": "b", "clusterOverrides": [{"path": "/spec/replicas", "value": 5}]}],
		"template": {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}}}`
	fed := &unstructured.Unstructured{}
	if err := fed.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	spec, err := render.ParseSpec(fed)
	if err != nil {
		t.Fatal(err)
	}
	spec.Rollout = &typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutWaves}
	// Revision 1 had no override: the planned content, revision 2,
	// changes b's copy only.
	template, _, _ := unstructured.NestedMap(fed.Object, "spec", "template")
	revs := []rollout.Revision{{Number: 1, Template: template}}
	pl := Placement{targets{names: []string{"a", "b", "edge", "gone", "new"}}}
	pending := typesv1beta1.ClusterVersion{TargetRevision: 1, State: typesv1beta1.RolloutPending, Health: corev1beta1.HealthProgressing, HealthReason: "ReplicasNotUpdated"}
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	for name, cv := range map[string]typesv1beta1.ClusterVersion{"a": pending, "b": pending, "edge": pending, "gone": {TargetRevision: 7, State: typesv1beta1.InSync}} {
		cv.ClusterName = typesv1beta1.ClusterName(name)
		cpv.Status.ClusterVersions = append(cpv.Status.ClusterVersions, cv)
	}
	var clusters []corev1beta1.FederatedCluster
	for _, name := range []string{"a", "b", "edge", "gone", "new"} {
		fc := corev1beta1.FederatedCluster{}
		fc.Name = name
		if name == "b" || name == "edge" {
			fc.Spec.SyncMode = corev1beta1.SyncModePull
		}
		clusters = append(clusters, fc)
	}
	d, err := DecideRollout(t.Context(), rollout.Store{DryRun: true}, deploymentType, fed, spec, cpv, pl, clusters, "shop", revs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.Latest.Number != 2 || d.Input.Latest != 2 {
		t.Fatalf("latest revision %d (engine told %d), want 2", d.Latest.Number, d.Input.Latest)
	}
	got := d.Input.Clusters
	inSync := rollout.Cluster{Target: 1, State: typesv1beta1.InSync, Health: corev1beta1.HealthProgressing, HealthReason: "ReplicasNotUpdated"}
	want := map[string]rollout.Cluster{
		"a":    {Target: 1, State: typesv1beta1.InSync, Health: corev1beta1.HealthProgressing, HealthReason: "ReplicasNotUpdated", Unchanged: true},
		"b":    inSync,
		"edge": {Target: 1, State: typesv1beta1.InSync, Health: corev1beta1.HealthProgressing, HealthReason: "ReplicasNotUpdated", Unchanged: true},
		// Revision 7 is not kept: not known to be the same.
		"gone": {Target: 7, State: typesv1beta1.InSync},
		"new":  {},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("clusters %v, want %d", got, len(want))
	}
}

// TestAHeldClusterTakesFailedOverReplicasAtItsRevision: a cluster a rollout
// in waves holds at an earlier revision, given more replicas because
// another failed over, runs them at its own revision: failover changes
// counts, never pushes a held revision early.
func TestAHeldClusterTakesFailedOverReplicasAtItsRevision(t *testing.T) {
	t.Parallel()
	const doc = `{"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment", "metadata": {"name": "web", "namespace": "shop"},
		"spec": {"template": {"spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}}}`
	fed := &unstructured.Unstructured{}
	if err := fed.UnmarshalJSON([]byte(doc)); err != nil {
		t.Fatal(err)
	}
	held := rollout.Revision{Number: 1, Template: map[string]any{"spec": map[string]any{"replicas": int64(2),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.25"}}}}}}}
	failedOver := targets{names: []string{"a", "c"}, replicas: map[string]int32{"a": 3, "c": 2},
		failover: &failoverState{at: map[string]metav1.Time{"c": metav1.Now()}}}
	in, err := revisionInput(fed, held, &typesv1beta1.ClusterPropagatedVersion{}, failedOver)
	if err != nil {
		t.Fatal(err)
	}
	copyOfA, err := deploymentType.Render(in.fed, in.spec, "a", replicasIn(in.replicas, "a"))
	if err != nil {
		t.Fatal(err)
	}
	var image string
	if containers, _, _ := unstructured.NestedSlice(copyOfA.Object, "spec", "template", "spec", "containers"); len(containers) == 1 {
		image, _ = containers[0].(map[string]any)["image"].(string)
	}
	replicas, _, _ := unstructured.NestedInt64(copyOfA.Object, "spec", "replicas")
	if image != "nginx:1.25" || replicas != 3 {
		t.Errorf("the held cluster's copy: image %q, %d replicas; want its revision's nginx:1.25 with the 3 replicas failover gave it", image, replicas)
	}
}
