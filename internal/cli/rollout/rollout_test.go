package rollout

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
	engine "github.com/fedwarden/fedwarden/internal/rollout"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no subcommand argument", args: []string{"status"}, wantErr: "status takes one argument, the federated resource, as KIND/NAME; got 0"},
		{name: "two arguments", args: []string{"pause", "fdeploy", "web"}, wantErr: "pause takes one argument, the federated resource, as KIND/NAME; got 2"},
		{name: "not KIND/NAME", args: []string{"resume", "web"}, wantErr: `"web" is not KIND/NAME`},
		{name: "not a subcommand", args: []string{"fdeploy/web"}, wantErr: `rollout has no subcommand "fdeploy/web": use status, pause, resume, undo or history`},
		{name: "bad request timeout", args: []string{"history", "fdeploy/web", "--request-timeout", "0s"}, wantErr: "--request-timeout 0s must be positive"},
		{name: "bad control-plane namespace", args: []string{"undo", "fdeploy/web", "--control-plane-namespace", "a/b"}, wantErr: `--control-plane-namespace: "a/b" is not a namespace name`},
		{name: "negative timeout", args: []string{"status", "fdeploy/web", "--timeout", "-1s"}, wantErr: "--timeout -1s must not be negative"},
		{name: "negative to-revision", args: []string{"undo", "fdeploy/web", "--to-revision", "-1"}, wantErr: "--to-revision -1 must not be negative"},
		{name: "negative revision", args: []string{"history", "fdeploy/web", "--revision", "-2"}, wantErr: "--revision -2 must not be negative"},
		{name: "to-revision not a number", args: []string{"undo", "fdeploy/web", "--to-revision", "two"}, wantErr: `invalid argument "two" for "--to-revision"`},
		{name: "unknown flag", args: []string{"status", "fdeploy/web", "--frobnicate"}, wantErr: "unknown flag: --frobnicate"},
		{name: "flag of another subcommand", args: []string{"pause", "fdeploy/web", "--all-at-once"}, wantErr: "unknown flag: --all-at-once"},
		{name: "missing context", args: []string{"status", "fdeploy/web", "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := tt.args
			if len(args) > 1 {
				args = append(args, host...)
			}
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, args...)
		})
	}
}

func TestUnreachableHostExitsWith1(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	for _, sub := range []string{"status", "pause", "resume", "undo", "history"} {
		_, stderr, code := clitest.Execute(NewCommand, sub, "fdeploy/web", "-n", "shop", "--host-kubeconfig", kc, "--request-timeout", "2s")
		if code != 1 || !strings.Contains(stderr, "listing FederatedTypeConfigs") {
			t.Errorf("%s: exit code %d, want 1; stderr %q", sub, code, stderr)
		}
	}
}

// waves is a snapshot of a rollout in waves at generation 2, observed.
func waves(conds ...metav1.Condition) snapshot {
	return snapshot{
		name: "FederatedDeployment shop/web", resume: "fedwarden rollout resume fdeploy/web -n shop", generation: 2,
		spec: &typesv1beta1.Rollout{Strategy: typesv1beta1.RolloutWaves},
		status: typesv1beta1.FederatedStatus{ObservedGeneration: 2, Conditions: conds, Rollout: &typesv1beta1.RolloutStatus{
			Revision: 3, FromRevision: 2,
			Waves: []typesv1beta1.WaveStatus{{Name: "canary", Phase: typesv1beta1.WaveComplete}, {Name: "main", Phase: typesv1beta1.WaveAwaitingApproval}},
		}},
	}
}

func condition(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

func TestVerdict(t *testing.T) {
	t.Parallel()
	done := condition(typesv1beta1.FederatedRolledOut, metav1.ConditionTrue, typesv1beta1.ReasonRolloutComplete, "")
	notRolledOut := condition(typesv1beta1.FederatedRolledOut, metav1.ConditionFalse, typesv1beta1.ReasonRolloutProgressing, "wave canary: 1 of 2 clusters Healthy")
	haltedCond := condition(typesv1beta1.FederatedRolloutHalted, metav1.ConditionTrue, typesv1beta1.ReasonDeadlineExceeded, "wave canary took more than 600s")
	stale := waves(haltedCond)
	stale.generation = 3
	paused := waves(notRolledOut)
	paused.spec.Paused = true
	progressing := waves(notRolledOut)
	progressing.status.Rollout.Waves[1].Phase = typesv1beta1.WavePending
	all := func(conds ...metav1.Condition) snapshot {
		s := waves(conds...)
		s.spec, s.status.Rollout = nil, nil
		return s
	}
	tests := []struct {
		name string
		snap snapshot
		want outcome
		line string
	}{
		{"rolled out", waves(done), rolledOut, "Rolled out: every placed cluster targets revision 3"},
		{"halted", waves(notRolledOut, haltedCond), halted, "Halted (ProgressDeadlineExceeded): wave canary took more than 600s"},
		{"not observed", stale, waiting, "Waiting for the control plane to observe generation 3 (the status is of generation 2)"},
		{"paused", paused, waiting, "Paused: `fedwarden rollout resume fdeploy/web -n shop` resumes it"},
		{"awaiting approval", waves(notRolledOut), waiting, "Wave main awaits approval: `fedwarden rollout resume fdeploy/web -n shop` starts it"},
		{"progressing", progressing, waiting, "Rolling out (RolloutProgressing): wave canary: 1 of 2 clusters Healthy"},
		{"waves, nothing recorded", func() snapshot { s := waves(); s.status.Rollout = nil; return s }(), waiting, "Waiting for the control plane to start the rollout"},
		{"all, rolled out", all(done), rolledOut, "Rolled out: every placed cluster targets the latest revision"},
		{"all, propagated", all(condition(typesv1beta1.FederatedPropagated, metav1.ConditionTrue, "Propagated", "")), rolledOut,
			"Rolled out: every placed cluster has the current template and overrides"},
		{"all, propagating", all(condition(typesv1beta1.FederatedPropagated, metav1.ConditionFalse, "PropagationFailed", "cluster b: Unreachable")), waiting,
			"Propagating (PropagationFailed): cluster b: Unreachable"},
		{"all, no status", all(), waiting, "Waiting for the control plane to propagate it"},
	}
	for _, tt := range tests {
		got, line := tt.snap.verdict()
		if got != tt.want || line != tt.line {
			t.Errorf("%s: %v %q, want %v %q", tt.name, got, line, tt.want, tt.line)
		}
	}
}

func TestPrintWaves(t *testing.T) {
	t.Parallel()
	s := waves(condition(typesv1beta1.FederatedRolledOut, metav1.ConditionFalse, typesv1beta1.ReasonAwaitingApproval, ""))
	s.status.Rollout.Waves = []typesv1beta1.WaveStatus{
		{Name: "canary", Phase: typesv1beta1.WaveComplete, Clusters: []typesv1beta1.ClusterName{"a", "b"}},
		{Name: "empty", Phase: typesv1beta1.WaveComplete},
		{Name: "main", Phase: typesv1beta1.WaveAwaitingApproval, Clusters: []typesv1beta1.ClusterName{"c"}, Message: "waits for approval"},
	}
	s.cpv = &typesv1beta1.ClusterPropagatedVersion{
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Clusters: []typesv1beta1.PlacedCluster{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "new"}}},
		Status: typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "a", TargetRevision: 3, State: typesv1beta1.InSync, Health: "Healthy"},
			{ClusterName: "c", TargetRevision: 2, State: typesv1beta1.RolloutPending},
		}},
	}
	var b strings.Builder
	if err := s.print(&b); err != nil {
		t.Fatal(err)
	}
	want := `FederatedDeployment shop/web: revision 3 (from revision 2), strategy Waves
WAVE     PHASE              CLUSTER   TARGET   STATE            HEALTH
canary   Complete           a         3        InSync           Healthy
                            b         -        -                -
empty    Complete           -                                   
main     AwaitingApproval   c         2        RolloutPending   -
-                           new       -        -                -
Wave main: waits for approval
Wave main awaits approval: ` + "`fedwarden rollout resume fdeploy/web -n shop`" + ` starts it
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	s.status.Rollout = nil
	s.spec.Paused = true
	s.cpv = nil
	b.Reset()
	_ = s.print(&b)
	if !strings.HasPrefix(b.String(), "FederatedDeployment shop/web: strategy Waves, paused, no rollout recorded yet\nNo ClusterPropagatedVersion yet") {
		t.Errorf("no rollout yet:\n%s", b.String())
	}
}

func TestPlanResume(t *testing.T) {
	t.Parallel()
	one := int32(1)
	awaiting := waves()
	paused := waves()
	paused.spec.Paused = true
	approved := waves()
	approved.status.Rollout.Approved = &one
	nothing := waves()
	nothing.status.Rollout.Waves[1].Phase = typesv1beta1.WaveProgressing
	tests := []struct {
		name        string
		snap        snapshot
		annotations map[string]string
		want        resumption
		says        string
	}{
		{"awaiting approval", awaiting, nil, resumption{approve: "3/1", wave: "wave main (index 1) of revision 3"},
			"fdeploy/web approved wave main (index 1) of revision 3"},
		{"paused and awaiting approval", paused, nil, resumption{unpause: true, approve: "3/1", wave: "wave main (index 1) of revision 3"},
			"fdeploy/web resumed; approved wave main (index 1) of revision 3"},
		{"approved in the status", approved, nil, resumption{approved: "wave main (index 1) of revision 3"},
			"fdeploy/web: nothing to resume: wave main (index 1) of revision 3 is approved already; the control plane starts it"},
		{"approved by the annotation", awaiting, map[string]string{approveAnnotation: "3/1"}, resumption{approved: "wave main (index 1) of revision 3"},
			"fdeploy/web: nothing to resume: wave main (index 1) of revision 3 is approved already; the control plane starts it"},
		{"approval of an earlier revision", awaiting, map[string]string{approveAnnotation: "2/1"}, resumption{approve: "3/1", wave: "wave main (index 1) of revision 3"},
			"fdeploy/web approved wave main (index 1) of revision 3"},
		{"nothing", nothing, nil, resumption{}, "fdeploy/web: nothing to resume: the rollout is not paused and no wave awaits approval"},
		{"no rollout", snapshot{}, nil, resumption{}, "fdeploy/web: nothing to resume: the rollout is not paused and no wave awaits approval"},
	}
	for _, tt := range tests {
		got := planResume(tt.snap, tt.annotations)
		if got != tt.want || got.says("fdeploy/web") != tt.says {
			t.Errorf("%s: %+v %q, want %+v %q", tt.name, got, got.says("fdeploy/web"), tt.want, tt.says)
		}
	}
}

func TestRolloutPatch(t *testing.T) {
	t.Parallel()
	paused := false
	tests := []struct {
		name string
		got  map[string]any
		want string
	}{
		{"pause", rolloutPatch(new(true), "", ""), `{"spec":{"rollout":{"paused":true}}}`},
		{"resume and approve", rolloutPatch(&paused, "3/1", "42"), `{"metadata":{"annotations":{"fedwarden.io/approve-wave":"3/1"},"resourceVersion":"42"},"spec":{"rollout":{"paused":false}}}`},
		{"approve only", rolloutPatch(nil, "3/0", "42"), `{"metadata":{"annotations":{"fedwarden.io/approve-wave":"3/0"},"resourceVersion":"42"}}`},
	}
	for _, tt := range tests {
		raw, _ := json.Marshal(tt.got)
		if string(raw) != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, raw, tt.want)
		}
	}
}

func TestPlanUndo(t *testing.T) {
	t.Parallel()
	k := func(s string) engine.Key { return engine.Key{Template: s, Overrides: s} }
	revs := []engine.Revision{{Number: 1, Key: k("a")}, {Number: 3, Key: k("c")}, {Number: 4, Key: k("d")}}
	tests := []struct {
		name    string
		revs    []engine.Revision
		to      typesv1beta1.Revision
		current engine.Key
		from    typesv1beta1.Revision
		next    typesv1beta1.Revision
		already bool
		wantErr string
	}{
		{name: "the one before the latest", revs: revs, current: k("d"), from: 3, next: 5},
		{name: "a given one", revs: revs, to: 1, current: k("d"), from: 1, next: 5},
		{name: "the latest", revs: revs, to: 4, current: k("d"), from: 4, next: 5, already: true},
		{name: "no keys recorded", revs: []engine.Revision{{Number: 1}, {Number: 2}}, current: k("x"), from: 1, next: 3},
		{name: "missing", revs: revs, to: 2, current: k("d"), wantErr: "FederatedDeployment shop/web has no revision 2 (its revisions: 1, 3, 4)"},
		{name: "only one", revs: revs[:1], current: k("a"), wantErr: "FederatedDeployment shop/web has only revision 1: there is no earlier revision to roll back to"},
		{name: "none", current: k("a"), wantErr: "FederatedDeployment shop/web has no revisions yet"},
		{name: "not recorded yet", revs: revs, current: k("e"), wantErr: "the control plane has not recorded them as a revision yet"},
	}
	for _, tt := range tests {
		plan, err := planUndo("FederatedDeployment shop/web", tt.revs, tt.to, tt.current)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: %v, want %q", tt.name, err, tt.wantErr)
			}
		case err != nil || plan.from.Number != tt.from || plan.next != tt.next || plan.already != tt.already:
			t.Errorf("%s: %+v, %v; want from %d, next %d, already %v", tt.name, plan, err, tt.from, tt.next, tt.already)
		}
	}
}

func TestUndoPatch(t *testing.T) {
	t.Parallel()
	fed := func(doc string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(doc)); err != nil {
			t.Fatal(err)
		}
		return u
	}
	withOverrides := fed(`{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","resourceVersion":"7","annotations":{"a":"b"}},
		"spec":{"template":{"spec":{"replicas":1}},"overrides":[{"clusterName":"x"}]}}`)
	bare := fed(`{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","resourceVersion":"7"},"spec":{"placement":{}}}`)
	noSpec := fed(`{"apiVersion":"types.kubefed.io/v1beta1","kind":"FederatedDeployment","metadata":{"name":"web","resourceVersion":"7"}}`)
	template := json.RawMessage(`{"spec":{"replicas":12345678901234567}}`)
	overrides := json.RawMessage(`[{"clusterName":"y","clusterOverrides":[{"path":"/spec/replicas","value":2}]}]`)
	test := `{"op":"test","path":"/metadata/resourceVersion","value":"7"}`
	tests := []struct {
		name      string
		fed       *unstructured.Unstructured
		content   rawContent
		allAtOnce string
		want      string
	}{
		{"replace both", withOverrides, rawContent{Template: template, Overrides: overrides}, "",
			`[` + test + `,{"op":"replace","path":"/spec/template","value":{"spec":{"replicas":12345678901234567}}},` +
				`{"op":"replace","path":"/spec/overrides","value":[{"clusterName":"y","clusterOverrides":[{"path":"/spec/replicas","value":2}]}]}]`},
		{"remove overrides, annotate", withOverrides, rawContent{Template: template}, "5",
			`[` + test + `,{"op":"replace","path":"/spec/template","value":{"spec":{"replicas":12345678901234567}}},{"op":"remove","path":"/spec/overrides"},` +
				`{"op":"add","path":"/metadata/annotations/fedwarden.io~1rollout-all-at-once","value":"5"}]`},
		{"add both, first annotation", bare, rawContent{Template: template, Overrides: overrides}, "5",
			`[` + test + `,{"op":"add","path":"/spec/template","value":{"spec":{"replicas":12345678901234567}}},` +
				`{"op":"add","path":"/spec/overrides","value":[{"clusterName":"y","clusterOverrides":[{"path":"/spec/replicas","value":2}]}]},` +
				`{"op":"add","path":"/metadata/annotations","value":{"fedwarden.io/rollout-all-at-once":"5"}}]`},
		{"no overrides either side, null template", bare, rawContent{Template: json.RawMessage("null")}, "",
			`[` + test + `,{"op":"add","path":"/spec/template","value":{}}]`},
		{"no spec", noSpec, rawContent{Template: template, Overrides: overrides}, "",
			`[` + test + `,{"op":"add","path":"/spec","value":{"overrides":[{"clusterName":"y","clusterOverrides":[{"path":"/spec/replicas","value":2}]}],"template":{"spec":{"replicas":12345678901234567}}}}]`},
	}
	for _, tt := range tests {
		got, err := undoPatch(tt.fed, tt.content, tt.allAtOnce)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %v\n got %s\nwant %s", tt.name, err, got, tt.want)
		}
	}
}

func TestTargets(t *testing.T) {
	t.Parallel()
	revs := []engine.Revision{{Number: 1}, {Number: 2}, {Number: 3}}
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Clusters: []typesv1beta1.PlacedCluster{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}}},
		Status: typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "a", TargetRevision: 3}, {ClusterName: "b", TargetRevision: 2}, {ClusterName: "c"},
			// Left, not placed any more: not counted.
			{ClusterName: "gone", TargetRevision: 1},
		}},
	}
	got := targets(revs, cpv)
	if len(got) != 2 || got[3] != 3 || got[2] != 1 {
		t.Errorf("targets: %v, want 3 on revision 3 (a, c and d, which have none), 1 on revision 2", got)
	}
	if got := targets(revs, nil); len(got) != 0 {
		t.Errorf("targets without a CPV: %v", got)
	}
}

func TestLowerFirst(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Halted (X): y": "halted (X): y", "": "", "already": "already"} {
		if got := lowerFirst(in); got != want {
			t.Errorf("lowerFirst(%q) = %q, want %q", in, got, want)
		}
	}
}
