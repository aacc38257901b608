package rollout

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/localfed"
	engine "github.com/fedwarden/fedwarden/internal/rollout"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// These tests run the commands against a real host API server with
// Fedwarden's CRDs, and no controller-manager: the test plays the rollout
// engine. It writes the ControllerRevisions in the documented format, the
// federated resource's status.rollout and conditions (through the status
// subresource) and the ClusterPropagatedVersion as the engine would, and
// moves them on where the engine would, so that what is checked is the
// command line over the API, not the engine.

const deploymentsTypeConfig = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: deployments.apps}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  targetType: {group: apps, kind: Deployment, pluralName: deployments, scope: Namespaced, version: v1}
`

// The three revisions of the FederatedDeployment web: template and
// overrides, as spec has them.
var webRevisions = []struct {
	template, overrides, cause string
}{
	{
		template:  `{"metadata":{"labels":{"app":"web"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.25"}]}}}}`,
		overrides: `[{"clusterName":"member-2","clusterOverrides":[{"path":"/spec/replicas","value":5}]}]`,
		cause:     "first release",
	},
	{
		template: `{"metadata":{"labels":{"app":"web"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}}}`,
		cause:    "kubectl set image: nginx:1.26",
	},
	{
		template:  `{"metadata":{"labels":{"app":"web","tier":"front"}},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]}}}}`,
		overrides: `[{"clusterName":"member-1","clusterOverrides":[{"path":"/metadata/labels/canary","value":"yes"}]}]`,
		cause:     "nginx:1.27",
	},
}

// rollingOut is web's status while revision 3 rolls out: wave canary is
// done, wave main awaits approval.
const rollingOut = `
observedGeneration: %d
conditions:
- {type: RolledOut, status: "False", reason: AwaitingApproval, message: wave main awaits approval, lastTransitionTime: "2026-12-01T10:00:00Z"}
- {type: RolloutHalted, status: "False", reason: NotHalted, message: "", lastTransitionTime: "2026-12-01T10:00:00Z"}
rollout:
  revision: 3
  fromRevision: 2
  waves:
  - {name: canary, clusters: [member-1], phase: Complete, startedAt: "2026-12-01T10:00:00Z", healthySince: "2026-12-01T10:01:00Z"}
  - {name: main, clusters: [member-2], phase: AwaitingApproval, message: "pause: true: waits for fedwarden rollout resume"}
  - {name: rest, clusters: [member-3], phase: Pending}
`

const wantStatus = `FederatedDeployment shop/web: revision 3 (from revision 2), strategy Waves
WAVE     PHASE              CLUSTER    TARGET   STATE            HEALTH
canary   Complete           member-1   3        InSync           Healthy
main     AwaitingApproval   member-2   2        RolloutPending   Healthy
rest     Pending            member-3   2        RolloutPending   Progressing
Wave main: pause: true: waits for fedwarden rollout resume
Wave main awaits approval: ` + "`fedwarden rollout resume fdeploy/web -n shop`" + ` starts it
`

const wantHistory = `REVISION   TEMPLATE   OVERRIDE   CLUSTERS   CHANGE-CAUSE
1          1          1          0          first release
2          2          1          2          kubectl set image: nginx:1.26
3          3          2          1          nginx:1.27
`

// testBed is a host with a FederatedDeployment web in waves.
type testBed struct {
	c     client.Client
	flags []string
}

func TestRollout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	tb := newTestBed(t, fed.Host.Kubeconfig)
	tb.create(ctx, t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})
	tb.createYAML(ctx, t, deploymentsTypeConfig)
	tb.setUpWeb(ctx, t)

	t.Run("status once", func(t *testing.T) { tb.checkStatusOnce(t) })
	t.Run("history", func(t *testing.T) { tb.checkHistory(t) })
	t.Run("pause and resume", func(t *testing.T) { tb.checkPauseResume(ctx, t) })
	t.Run("status waits", func(t *testing.T) { tb.checkStatusWaits(ctx, t) })
	t.Run("undo", func(t *testing.T) { tb.checkUndo(ctx, t) })
	t.Run("secret history", func(t *testing.T) { tb.checkSecret(ctx, t, fed.Host.Kubeconfig) })
	t.Run("cluster-scoped", func(t *testing.T) { tb.checkClusterScoped(ctx, t, fed.Host.Kubeconfig) })
}

func newTestBed(t *testing.T, path string) *testBed {
	return &testBed{c: clitest.Client(t, path), flags: []string{"--host-kubeconfig", path}}
}

// run runs fedwarden rollout with args and the test bed's flags.
func (tb *testBed) run(args ...string) (stdout, stderr string, code int) {
	return clitest.Execute(NewCommand, append(args, tb.flags...)...)
}

// setUpWeb creates web at revision 3 with its three revisions, its status
// and its CPV, as the engine leaves them while wave main awaits approval.
func (tb *testBed) setUpWeb(ctx context.Context, t *testing.T) {
	web := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "annotations": map[string]any{typesv1beta1.AnnotationChangeCause: "nginx:1.27"}},
		"spec": map[string]any{
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "member-1"}, map[string]any{"name": "member-2"}, map[string]any{"name": "member-3"}}},
			"template":  decodeJSON(t, webRevisions[2].template),
			"overrides": decodeJSON(t, webRevisions[2].overrides),
			"rollout": map[string]any{"strategy": "Waves", "waves": []any{
				map[string]any{"name": "canary", "clusters": []any{"member-1"}},
				map[string]any{"name": "main", "clusters": []any{"member-2"}, "pause": true},
			}},
		},
	}}
	tb.create(ctx, t, web)
	for i, r := range webRevisions {
		n := i + 1
		// Template versions move with each template, override versions
		// only with the overrides: revision 2 has revision 1's.
		tb.createRevision(ctx, t, web, n, r.template, r.overrides, r.cause, fmt.Sprint(n), fmt.Sprint(max(n-1, 1)))
	}
	tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", fmt.Sprintf(rollingOut, web.GetGeneration()))
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "deployment-web"},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{
			Template: "web", TemplateKind: "FederatedDeployment", TemplateAPIVersion: "types.kubefed.io/v1beta1",
			Clusters: []typesv1beta1.PlacedCluster{{Name: "member-1"}, {Name: "member-2"}, {Name: "member-3"}},
		},
	}
	tb.create(ctx, t, cpv)
	cpv.Status = typesv1beta1.ClusterPropagatedVersionStatus{TemplateVersion: "3", OverrideVersion: "2", ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "member-1", TargetRevision: 3, TemplateVersion: "3", OverrideVersion: "2", State: typesv1beta1.InSync, Health: "Healthy"},
		{ClusterName: "member-2", TargetRevision: 2, TemplateVersion: "2", OverrideVersion: "1", State: typesv1beta1.RolloutPending, Health: "Healthy"},
		{ClusterName: "member-3", TargetRevision: 2, TemplateVersion: "2", OverrideVersion: "1", State: typesv1beta1.RolloutPending, Health: "Progressing"},
	}}
	if err := tb.c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
}

func (tb *testBed) checkStatusOnce(t *testing.T) {
	stdout, stderr, code := tb.run("status", "fdeploy/web", "-n", "shop", "--watch=false")
	if code != 0 || stdout != wantStatus {
		t.Errorf("status --watch=false: exit code %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout, wantStatus, stderr)
	}
	t.Logf("$ fedwarden rollout status fdeploy/web -n shop --watch=false\n%s", stdout)
}

func (tb *testBed) checkHistory(t *testing.T) {
	stdout, stderr, code := tb.run("history", "federateddeployment/web", "-n", "shop")
	if code != 0 || stdout != wantHistory {
		t.Errorf("history: exit code %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout, wantHistory, stderr)
	}
	t.Logf("$ fedwarden rollout history federateddeployment/web -n shop\n%s", stdout)

	stdout, stderr, code = tb.run("history", "deployment/web", "-n", "shop", "--revision", "1")
	want := "# federateddeployment.types.kubefed.io/web, revision 1: template version 1, override version 1, change cause \"first release\"\n"
	doc, err := yaml.YAMLToJSON([]byte(stdout))
	shown, _ := decodeJSON(t, string(doc)).(map[string]any)
	if code != 0 || err != nil || !strings.HasPrefix(stdout, want) ||
		!reflect.DeepEqual(shown["template"], decodeJSON(t, webRevisions[0].template)) || !reflect.DeepEqual(shown["overrides"], decodeJSON(t, webRevisions[0].overrides)) {
		t.Errorf("history --revision 1: exit code %d, %v, stdout:\n%s\nstderr: %s", code, err, stdout, stderr)
	}
	t.Logf("$ fedwarden rollout history deployment/web -n shop --revision 1\n%s", stdout)

	_, stderr, code = tb.run("history", "fdeploy/web", "-n", "shop", "--revision", "7")
	if code != 1 || !strings.Contains(stderr, "FederatedDeployment shop/web has no revision 7 (its revisions: 1, 2, 3)") {
		t.Errorf("history --revision 7: exit code %d, stderr %q", code, stderr)
	}
}

func (tb *testBed) checkPauseResume(ctx context.Context, t *testing.T) {
	stdout, stderr, code := tb.run("pause", "fdeploy/web", "-n", "shop")
	web := tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	if paused, _, _ := unstructured.NestedBool(web.Object, "spec", "rollout", "paused"); code != 0 || !paused ||
		stdout != "federateddeployment.types.kubefed.io/web paused\n" {
		t.Fatalf("pause: exit code %d, paused %v, stdout %q, stderr %q", code, paused, stdout, stderr)
	}
	if stdout, _, code = tb.run("pause", "fdeploy/web", "-n", "shop"); code != 0 || stdout != "federateddeployment.types.kubefed.io/web already paused\n" {
		t.Errorf("pause again: exit code %d, stdout %q", code, stdout)
	}
	// Until the engine observes the new generation, status says so.
	stdout, _, code = tb.run("status", "fdeploy/web", "-n", "shop", "--watch=false")
	if code != 0 || !strings.Contains(stdout, "strategy Waves, paused\n") ||
		!strings.HasSuffix(stdout, fmt.Sprintf("Waiting for the control plane to observe generation %d (the status is of generation %d)\n", web.GetGeneration(), web.GetGeneration()-1)) {
		t.Errorf("status while paused, not observed yet: exit code %d, stdout:\n%s", code, stdout)
	}
	tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", fmt.Sprintf(rollingOut, web.GetGeneration()))
	stdout, _, code = tb.run("status", "fdeploy/web", "-n", "shop", "--watch=false")
	if code != 0 || !strings.HasSuffix(stdout, "Paused: `fedwarden rollout resume fdeploy/web -n shop` resumes it\n") {
		t.Errorf("status while paused: exit code %d, stdout:\n%s", code, stdout)
	}

	stdout, stderr, code = tb.run("resume", "fdeploy/web", "-n", "shop")
	web = tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	paused, found, _ := unstructured.NestedBool(web.Object, "spec", "rollout", "paused")
	if code != 0 || paused || !found || web.GetAnnotations()[typesv1beta1.AnnotationApproveWave] != "3/1" ||
		stdout != "federateddeployment.types.kubefed.io/web resumed; approved wave main (index 1) of revision 3\n" {
		t.Fatalf("resume: exit code %d, paused %v (set %v), annotations %v, stdout %q, stderr %q", code, paused, found, web.GetAnnotations(), stdout, stderr)
	}
	t.Logf("$ fedwarden rollout resume fdeploy/web -n shop\n%s", stdout)
	// The engine has not moved yet: the approval is there already.
	stdout, _, code = tb.run("resume", "fdeploy/web", "-n", "shop")
	if code != 0 || !strings.Contains(stdout, "nothing to resume: wave main (index 1) of revision 3 is approved already") {
		t.Errorf("resume again: exit code %d, stdout %q", code, stdout)
	}
	// The engine starts wave main: nothing waits any more.
	tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", strings.NewReplacer(
		"phase: AwaitingApproval", "phase: Progressing", "reason: AwaitingApproval", "reason: RolloutProgressing",
		"fromRevision: 2", "fromRevision: 2\n  approved: 1").Replace(fmt.Sprintf(rollingOut, web.GetGeneration())))
	stdout, _, code = tb.run("resume", "fdeploy/web", "-n", "shop")
	if code != 0 || stdout != "federateddeployment.types.kubefed.io/web: nothing to resume: the rollout is not paused and no wave awaits approval\n" {
		t.Errorf("resume with nothing to resume: exit code %d, stdout %q", code, stdout)
	}
}

func (tb *testBed) checkStatusWaits(ctx context.Context, t *testing.T) {
	web := tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	progressing := strings.NewReplacer(
		`phase: AwaitingApproval, message: "pause: true: waits for fedwarden rollout resume"`, `phase: Progressing, startedAt: "2026-12-01T10:05:00Z"`,
		"reason: AwaitingApproval", "reason: RolloutProgressing",
		"message: wave main awaits approval", "message: wave main is progressing").
		Replace(fmt.Sprintf(rollingOut, web.GetGeneration()))
	// Wave main started: member-2 targets revision 3, on its way there.
	tb.setEntry(ctx, t, "member-2", func(cv *typesv1beta1.ClusterVersion) {
		cv.TargetRevision, cv.TemplateVersion, cv.OverrideVersion, cv.State, cv.Health = 3, "3", "2", typesv1beta1.InSync, "Progressing"
	})
	tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", progressing)

	stdout, stderr, code := tb.run("status", "fdeploy/web", "-n", "shop", "--timeout", "2s")
	// Where the rollout was shows unless the host took the whole 2s to answer.
	if code != 1 || !strings.HasPrefix(stderr, "Error: timed out after 2s waiting for the rollout of FederatedDeployment shop/web") ||
		(stdout != "" && !strings.HasSuffix(stderr, "; last seen: Rolling out (RolloutProgressing): wave main is progressing\n")) {
		t.Errorf("status --timeout 2s: exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Halted while status waits: exit code 1, and why.
	halted := strings.NewReplacer(
		`{type: RolloutHalted, status: "False", reason: NotHalted, message: ""`,
		`{type: RolloutHalted, status: "True", reason: ClusterDegraded, message: "cluster member-2: Degraded: ProgressDeadlineExceeded"`,
		`phase: Progressing, startedAt: "2026-12-01T10:05:00Z"`,
		`phase: Halted, startedAt: "2026-12-01T10:05:00Z", message: "member-2 is Degraded at revision 3: ProgressDeadlineExceeded"`).Replace(progressing)
	out, err := tb.statusWhile(ctx, t, func() {
		tb.setEntry(ctx, t, "member-2", func(cv *typesv1beta1.ClusterVersion) { cv.Health = "Degraded" })
		tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", halted)
	})
	if streams.ExitCode(err) != 1 || err.Error() != "FederatedDeployment shop/web: rollout halted (ClusterDegraded): cluster member-2: Degraded: ProgressDeadlineExceeded" ||
		!strings.HasSuffix(out, "\nHalted (ClusterDegraded): cluster member-2: Degraded: ProgressDeadlineExceeded\n") {
		t.Errorf("status while the rollout halts: %v (exit code %d), stdout:\n%s", err, streams.ExitCode(err), out)
	}
	t.Logf("$ fedwarden rollout status fdeploy/web -n shop\n%sError: %v", out, err)

	// Rolled out while status waits: exit code 0.
	tb.setEntry(ctx, t, "member-2", func(cv *typesv1beta1.ClusterVersion) { cv.Health = "Progressing" })
	tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", progressing)
	done := strings.NewReplacer(
		`{type: RolledOut, status: "False", reason: RolloutProgressing`, `{type: RolledOut, status: "True", reason: RolloutComplete`,
		"phase: Progressing", "phase: Complete", "phase: Pending", "phase: Complete").Replace(progressing)
	out, err = tb.statusWhile(ctx, t, func() {
		for _, cluster := range []string{"member-2", "member-3"} {
			tb.setEntry(ctx, t, cluster, func(cv *typesv1beta1.ClusterVersion) {
				cv.TargetRevision, cv.TemplateVersion, cv.OverrideVersion, cv.State, cv.Health = 3, "3", "2", typesv1beta1.InSync, "Healthy"
			})
		}
		tb.setStatus(ctx, t, "FederatedDeployment", "shop", "web", done)
	})
	if err != nil || !strings.HasSuffix(out, "\nRolled out: every placed cluster targets revision 3\n") {
		t.Errorf("status while the rollout completes: %v, stdout:\n%s", err, out)
	}
	t.Logf("$ fedwarden rollout status fdeploy/web -n shop\n%s", out)
}

// statusWhile runs status, waits until it has printed the rollout, calls
// change, and returns what status printed and its error once it ends.
func (tb *testBed) statusWhile(ctx context.Context, t *testing.T, change func()) (string, error) {
	t.Helper()
	out := &signalWriter{printed: make(chan struct{})}
	cmd := NewCommand(streams.IO{In: strings.NewReader(""), Out: out, ErrOut: out})
	cmd.SetArgs(append([]string{"status", "fdeploy/web", "-n", "shop", "--timeout", "1m"}, tb.flags...))
	ended := make(chan error, 1)
	go func() { ended <- cmd.ExecuteContext(ctx) }()
	select {
	case <-out.printed:
	case err := <-ended:
		return out.String(), fmt.Errorf("ended before the change: %w", err)
	}
	change()
	err := <-ended
	return out.String(), err
}

// signalWriter collects what is written, and closes printed on the first
// write.
type signalWriter struct {
	mu      sync.Mutex
	b       strings.Builder
	printed chan struct{}
	once    sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.printed) })
	return w.b.Write(p)
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func (tb *testBed) checkUndo(ctx context.Context, t *testing.T) {
	// To the revision before the latest: 2, which has no overrides.
	stdout, stderr, code := tb.run("undo", "fdeploy/web", "-n", "shop")
	web := tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	if _, hasOverrides := web.Object["spec"].(map[string]any)["overrides"]; code != 0 || hasOverrides ||
		!reflect.DeepEqual(web.Object["spec"].(map[string]any)["template"], decodeJSON(t, webRevisions[1].template)) ||
		stdout != "federateddeployment.types.kubefed.io/web rolled back to revision 2's content as revision 4\n" {
		t.Fatalf("undo: exit code %d, stdout %q, stderr %q, spec %v", code, stdout, stderr, web.Object["spec"])
	}
	if _, set := web.GetAnnotations()[typesv1beta1.AnnotationAllAtOnce]; set {
		t.Errorf("undo without --all-at-once set %s", typesv1beta1.AnnotationAllAtOnce)
	}
	t.Logf("$ fedwarden rollout undo fdeploy/web -n shop\n%s", stdout)
	// The engine makes revision 2's content the latest revision, 4.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"revision":4}`))
	if err := tb.c.Patch(ctx, &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "federateddeployment-web-2"}}, patch); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code = tb.run("undo", "fdeploy/web", "-n", "shop", "--to-revision", "1", "--all-at-once")
	web = tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	spec := web.Object["spec"].(map[string]any)
	if code != 0 || !reflect.DeepEqual(spec["template"], decodeJSON(t, webRevisions[0].template)) || !reflect.DeepEqual(spec["overrides"], decodeJSON(t, webRevisions[0].overrides)) ||
		web.GetAnnotations()[typesv1beta1.AnnotationAllAtOnce] != "5" || web.GetAnnotations()[typesv1beta1.AnnotationChangeCause] != "nginx:1.27" ||
		stdout != "federateddeployment.types.kubefed.io/web rolled back to revision 1's content as revision 5, to every cluster at once\n" {
		t.Fatalf("undo --to-revision 1 --all-at-once: exit code %d, stdout %q, stderr %q, annotations %v, spec %v", code, stdout, stderr, web.GetAnnotations(), spec)
	}
	if _, found := spec["rollout"]; !found {
		t.Errorf("undo removed spec.rollout: %v", spec)
	}
	t.Logf("$ fedwarden rollout undo fdeploy/web -n shop --to-revision 1 --all-at-once\n%s", stdout)

	before := web.GetResourceVersion()
	stdout, _, code = tb.run("undo", "fdeploy/web", "-n", "shop", "--to-revision", "4")
	if code != 0 || stdout != "federateddeployment.types.kubefed.io/web already at revision 4: nothing to undo\n" ||
		tb.get(ctx, t, "FederatedDeployment", "shop", "web").GetResourceVersion() != before {
		t.Errorf("undo to the latest revision: exit code %d, stdout %q", code, stdout)
	}
	_, stderr, code = tb.run("undo", "fdeploy/web", "-n", "shop", "--to-revision", "9")
	if code != 1 || !strings.Contains(stderr, "FederatedDeployment shop/web has no revision 9 (its revisions: 1, 3, 4)") {
		t.Errorf("undo to a revision that does not exist: exit code %d, stderr %q", code, stderr)
	}

	tb.checkUndoStale(ctx, t)
}

// checkUndoStale has undo write over a resource that changed since it was
// read: a change of its labels alone is kept, and undo writes; a change
// of its spec refuses the write, and nothing is written.
func (tb *testBed) checkUndoStale(ctx context.Context, t *testing.T) {
	stale := func(toRevision typesv1beta1.Revision) (*target, undoPlan) {
		t.Helper()
		o := &options{namespace: "shop", controlPlane: "kube-federation-system", requestTimeout: 30 * time.Second,
			host: kubeconfig.Source{Path: tb.flags[1]}, ref: kindref.Ref{Kind: "fdeploy", Name: "web"}}
		target, err := o.connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		revs, err := target.revisions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := planUndo(target.describe(), revs, toRevision, engine.KeyOf(target.fed))
		if err != nil {
			t.Fatal(err)
		}
		return target, plan
	}
	meanwhile := func(patch string) *unstructured.Unstructured {
		t.Helper()
		if err := tb.c.Patch(ctx, tb.get(ctx, t, "FederatedDeployment", "shop", "web"), client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		return tb.get(ctx, t, "FederatedDeployment", "shop", "web")
	}

	// Someone labels the resource after undo read it: undo writes, and
	// keeps the label.
	target, plan := stale(3)
	meanwhile(`{"metadata":{"labels":{"edited":"meanwhile"}}}`)
	if err := target.undo(ctx, plan, true); err != nil {
		t.Fatalf("undo after a change of the labels alone: %v", err)
	}
	if web := tb.get(ctx, t, "FederatedDeployment", "shop", "web"); web.GetLabels()["edited"] != "meanwhile" || web.GetAnnotations()[typesv1beta1.AnnotationAllAtOnce] == "" {
		t.Errorf("undo after a change of the labels: labels %v, annotations %v; want the label kept and the undo written", web.GetLabels(), web.GetAnnotations())
	}

	// Someone changes its spec after undo read it: nothing is written.
	target, plan = stale(1)
	before := meanwhile(`{"spec":{"driftPolicy":{"remediation":"Alert"}}}`)
	err := target.undo(ctx, plan, false)
	if err == nil || !strings.Contains(err.Error(), "FederatedDeployment shop/web changed since it was read (resourceVersion "+target.fed.GetResourceVersion()+", now "+before.GetResourceVersion()+"), so nothing was written: run undo again") {
		t.Errorf("undo of a stale read: %v", err)
	}
	if after := tb.get(ctx, t, "FederatedDeployment", "shop", "web"); after.GetResourceVersion() != before.GetResourceVersion() {
		t.Errorf("undo of a stale read wrote: resourceVersion %s, was %s", after.GetResourceVersion(), before.GetResourceVersion())
	}
	t.Logf("undo of a stale read: %v", err)
}

// checkSecret lists and shows the revisions of a FederatedSecret, whose
// values never show, and shows a rollout of strategy All.
func (tb *testBed) checkSecret(ctx context.Context, t *testing.T, kubeconfig string) {
	if stdout, stderr, code := clitest.Execute(enable.NewCommand, "secrets", "--host-kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("enable secrets: exit code %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	password, other := "s3cr3t-Passw0rd", "0ther-Passw0rd!"
	b64 := base64.StdEncoding.EncodeToString
	template := fmt.Sprintf(`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"data\":{\"password\":\"%s\"}}","note":"rotated from %s"}},"data":{"password":"%s"},"stringData":{"user":"admin-%s"},"type":"Opaque"}`,
		b64([]byte(password)), other, b64([]byte(password)), password)
	overrides := fmt.Sprintf(`[{"clusterName":"member-1","clusterOverrides":[{"path":"/data/password","value":"%s"},{"path":"/stringData","value":{"token":"%s"}},{"path":"/metadata/labels/env","value":"prod"}]}]`,
		b64([]byte(other)), other)
	db := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedSecret",
		"metadata": map[string]any{"name": "db", "namespace": "shop"},
		"spec": map[string]any{
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "member-1"}}},
			"template":  decodeJSON(t, template), "overrides": decodeJSON(t, overrides),
		},
	}}
	tb.create(ctx, t, db)
	// kubectl --record writes the command line, values included.
	cause := "kubectl create secret generic db --from-literal=password=" + password
	tb.createRevision(ctx, t, db, 1, template, overrides, cause, "1", "1")

	stdout, stderr, code := tb.run("history", "federatedsecret/db", "-n", "shop")
	if code != 0 || stdout != "REVISION   TEMPLATE   OVERRIDE   CLUSTERS   CHANGE-CAUSE\n1          1          1          0          <redacted: 72 bytes>\n" {
		t.Errorf("history of a FederatedSecret: exit code %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	table := stdout + stderr
	stdout, stderr, code = tb.run("history", "secret/db", "-n", "shop", "--revision", "1")
	if code != 0 || !strings.Contains(stdout, `change cause "<redacted: 72 bytes>"`) || !strings.Contains(stdout, "password: '<redacted: 15 bytes>'") || !strings.Contains(stdout, "value: '<redacted: 15 bytes>'") ||
		!strings.Contains(stdout, "token: '<redacted: 15 bytes>'") || !strings.Contains(stdout, "user: '<redacted: 21 bytes>'") ||
		!strings.Contains(stdout, "value: prod") || !strings.Contains(stdout, "type: Opaque") {
		t.Errorf("history --revision 1 of a FederatedSecret: exit code %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	for _, secret := range []string{password, other, b64([]byte(password)), b64([]byte(other))} {
		if strings.Contains(table+stdout+stderr, secret) {
			t.Errorf("history --revision 1 of a FederatedSecret printed a secret value %q:\n%s%s", secret, stdout, stderr)
		}
	}
	t.Logf("$ fedwarden rollout history secret/db -n shop --revision 1\n%s", stdout)

	// Strategy All: the clusters' versions.
	tb.setStatus(ctx, t, "FederatedSecret", "shop", "db", `
observedGeneration: 1
conditions:
- {type: Propagated, status: "True", reason: Propagated, message: "", lastTransitionTime: "2026-12-01T10:00:00Z"}`)
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "secret-db"},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{Template: "db", TemplateKind: "FederatedSecret", TemplateAPIVersion: "types.kubefed.io/v1beta1",
			Clusters: []typesv1beta1.PlacedCluster{{Name: "member-1"}}},
	}
	tb.create(ctx, t, cpv)
	cpv.Status.ClusterVersions = []typesv1beta1.ClusterVersion{{ClusterName: "member-1", TargetRevision: 1, TemplateVersion: "1", OverrideVersion: "1", State: typesv1beta1.InSync, Health: "Healthy"}}
	if err := tb.c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = tb.run("status", "federatedsecret/db", "-n", "shop")
	want := "FederatedSecret shop/db: strategy All: every cluster gets each revision at once\n" +
		"CLUSTER    TARGET   TEMPLATE   OVERRIDE   STATE    HEALTH\n" +
		"member-1   1        1          1          InSync   Healthy\n" +
		"Rolled out: every placed cluster has the current template and overrides\n"
	if code != 0 || stdout != want {
		t.Errorf("status of a FederatedSecret: exit code %d, stdout:\n%s\nwant:\n%s\nstderr: %s", code, stdout, want, stderr)
	}
	t.Logf("$ fedwarden rollout status federatedsecret/db -n shop\n%s", stdout)
}

// setEntry changes the CPV entry of web in cluster as the engine would.
func (tb *testBed) setEntry(ctx context.Context, t *testing.T, cluster string, change func(*typesv1beta1.ClusterVersion)) {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := tb.c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "deployment-web"}, cpv); err != nil {
		t.Fatal(err)
	}
	for i := range cpv.Status.ClusterVersions {
		if string(cpv.Status.ClusterVersions[i].ClusterName) == cluster {
			change(&cpv.Status.ClusterVersions[i])
		}
	}
	if err := tb.c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
}

// checkClusterScoped reads the revisions and CPV of a cluster-scoped
// federated resource in the control-plane namespace, and undoes it.
func (tb *testBed) checkClusterScoped(ctx context.Context, t *testing.T, kubeconfig string) {
	if stdout, stderr, code := clitest.Execute(enable.NewCommand, "clusterroles.rbac.authorization.k8s.io", "--host-kubeconfig", kubeconfig); code != 0 {
		t.Fatalf("enable clusterroles: exit code %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	if err := tb.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-federation-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	rules := []string{`{"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`, `{"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get","list"]}]}`}
	reader := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedClusterRole",
		"metadata": map[string]any{"name": "reader"},
		"spec": map[string]any{
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "member-1"}}},
			"template":  decodeJSON(t, rules[1]),
		},
	}}
	tb.create(ctx, t, reader)
	for i, r := range rules {
		reader.SetNamespace("kube-federation-system") // where its revisions are
		tb.createRevision(ctx, t, reader, i+1, r, "", "", fmt.Sprint(i+1), "1")
	}
	reader.SetNamespace("")

	stdout, stderr, code := tb.run("history", "clusterrole/reader")
	if code != 0 || !strings.Contains(stdout, "\n1 ") || !strings.Contains(stdout, "\n2 ") {
		t.Errorf("history of a cluster-scoped resource: exit code %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	stdout, stderr, code = tb.run("status", "federatedclusterroles/reader", "--watch=false")
	if code != 0 || !strings.Contains(stdout, "FederatedClusterRole reader: strategy All") || !strings.Contains(stdout, "No ClusterPropagatedVersion yet") {
		t.Errorf("status of a cluster-scoped resource: exit code %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	stdout, stderr, code = tb.run("undo", "clusterrole/reader")
	got := tb.get(ctx, t, "FederatedClusterRole", "", "reader")
	if code != 0 || !reflect.DeepEqual(got.Object["spec"].(map[string]any)["template"], decodeJSON(t, rules[0])) ||
		stdout != "federatedclusterrole.types.kubefed.io/reader rolled back to revision 1's content as revision 3\n" {
		t.Errorf("undo of a cluster-scoped resource: exit code %d, stdout %q, stderr %q, spec %v", code, stdout, stderr, got.Object["spec"])
	}
}

// createRevision writes revision n of fed as the engine does: a
// ControllerRevision labelled with fed's name and kind, whose data is
// {"template": ..., "overrides": ...}.
func (tb *testBed) createRevision(ctx context.Context, t *testing.T, fed *unstructured.Unstructured, n int, template, overrides, cause, tv, ov string) {
	t.Helper()
	data := `{"template":` + template
	if overrides != "" {
		data += `,"overrides":` + overrides
	}
	data += "}"
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: fed.GetNamespace(), Name: fmt.Sprintf("%s-%s-%d", strings.ToLower(fed.GetKind()), fed.GetName(), n),
			Labels: map[string]string{typesv1beta1.LabelRevisionOf: fed.GetName(), typesv1beta1.LabelRevisionKind: strings.ToLower(fed.GetKind())},
			Annotations: map[string]string{
				typesv1beta1.AnnotationTemplateVersion: tv, typesv1beta1.AnnotationOverrideVersion: ov,
			},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: fed.GetAPIVersion(), Kind: fed.GetKind(), Name: fed.GetName(), UID: fed.GetUID()}},
		},
		Data:     runtime.RawExtension{Raw: []byte(data)},
		Revision: int64(n),
	}
	if cause != "" {
		cr.Annotations[typesv1beta1.AnnotationChangeCause] = cause
	}
	tb.create(ctx, t, cr)
}

// setStatus replaces the status of a federated resource by status (YAML),
// through the status subresource.
func (tb *testBed) setStatus(ctx context.Context, t *testing.T, kind, namespace, name, status string) {
	t.Helper()
	obj := tb.get(ctx, t, kind, namespace, name)
	var st map[string]any
	if err := yaml.Unmarshal([]byte(status), &st); err != nil {
		t.Fatal(err)
	}
	obj.Object["status"] = st
	if err := tb.c.Status().Update(ctx, obj); err != nil {
		t.Fatal(err)
	}
}

func (tb *testBed) get(ctx context.Context, t *testing.T, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind(kind)
	if err := tb.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

func (tb *testBed) create(ctx context.Context, t *testing.T, obj client.Object) {
	t.Helper()
	if err := tb.c.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (tb *testBed) createYAML(ctx context.Context, t *testing.T, doc string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	tb.create(ctx, t, u)
}

// decodeJSON decodes JSON as an API server's answer is decoded: integers as
// int64.
func decodeJSON(t *testing.T, doc string) any {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(`{"kind":"K","apiVersion":"v1","x":` + doc + `}`)); err != nil {
		t.Fatal(err)
	}
	return u.Object["x"]
}
