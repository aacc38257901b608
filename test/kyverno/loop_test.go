package kyverno

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/test/kyverno/kyvernotest"
)

const (
	// wait bounds each step of the loop. Kyverno takes about a second,
	// and its reports controller 20 s (a 10 s enqueue delay, twice); make
	// test runs this package beside the end-to-end tests, whose load once
	// kept Kyverno from acting within 90 s.
	wait = 3 * time.Minute
	// reportSettle bounds the wait for the PolicyReport to pass a healed
	// CPV again before the test looks for Kyverno's same-second case (see
	// waitReportCleared): Kyverno aggregates its reports within seconds.
	reportSettle = 15 * time.Second
	// noLoopWindow is how long the loop is watched after the last heal for
	// writes that must not come: Kyverno acts within about a second, so a
	// loop would show several times over.
	noLoopWindow = 15 * time.Second
)

const (
	desiredImage = "nginx:1.27"
	editedImage  = "nginx:hotfix"
	imagePath    = "/spec/template/spec/containers/0/image"
	resyncKey    = "kubefed.io/resync"
)

var (
	cpvResource    = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "clusterpropagatedversions"}
	fdResource     = schema.GroupVersionResource{Group: "types.kubefed.io", Version: "v1beta1", Resource: "federateddeployments"}
	reportResource = schema.GroupVersionResource{Group: "wgpolicyk8s.io", Version: "v1alpha2", Resource: "policyreports"}
)

// The closed loop, with each policy set of deploy/kyverno (cel, legacy),
// Kyverno running as its chart's ServiceAccounts with deploy/kyverno/rbac.yaml:
// Fedwarden runs with remediation Alert, so a hand edit of a member's copy
// stays until Kyverno acts. With the report policy alone, an edit shows in
// the CPV (ModifiedOutOfBand) and fails the CPV in its PolicyReport, naming
// the cluster. With the resync policy too, the next edit is healed: Kyverno
// sets a new kubefed.io/resync on the FederatedDeployment, Fedwarden writes
// the copy back, the CPV is InSync and records the value, the PolicyReport
// passes the CPV again (see waitReportCleared for Kyverno's same-second
// case); a third edit gets another value, and nothing changes after, for
// noLoopWindow.
// Run with -v to see what kubectl get cpv / policyreport show at each step.
func TestKyvernoHealsDrift(t *testing.T) {
	if testing.Short() {
		t.Skip("needs real API servers and Kyverno's controllers")
	}
	ctrllog.SetLogger(logr.Discard())
	dir, err := kyvernotest.LogDir(t)
	if err != nil {
		t.Fatal(err)
	}
	bed, err := kyvernotest.StartBed(context.Background(), dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(bed.Logs())
		}
		if err := bed.Stop(); err != nil {
			t.Log(err)
		}
	})
	deploy, err := kyvernotest.DeployDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct{ name, report string }{
		{"cel", "fedwarden-report-drift"},
		{"legacy", "fedwarden-report-drift-legacy"},
	} {
		t.Run(set.name, func(t *testing.T) {
			healThroughKyverno(t, bed, filepath.Join(deploy, set.name, "report-drift.yaml"), filepath.Join(deploy, set.name, "resync-drift.yaml"), set.report)
		})
	}
}

// loop is one run of the loop: its namespace and watches.
type loop struct {
	t       *testing.T
	bed     *kyvernotest.Bed
	ns      string
	member  kubernetes.Interface
	cpvs    *kyvernotest.Recorder
	fds     *kyvernotest.Recorder
	reports *kyvernotest.Recorder
	cpvName string
	fdName  string
	// cpvUID names the CPV's PolicyReport.
	cpvUID string
}

// healThroughKyverno runs the loop with the policies of reportFile and
// resyncFile; reportPolicy names the report policy in the PolicyReport.
func healThroughKyverno(t *testing.T, bed *kyvernotest.Bed, reportFile, resyncFile, reportPolicy string) {
	l := newLoop(t, bed)
	cluster := bed.Clusters[0]
	l.install(reportFile)
	l.createFederatedDeployment()
	inSync, _ := l.waitCPV(0, "the copy InSync", func(cpv *unstructured.Unstructured) bool { return entry(cpv, cluster)["state"] == "InSync" })
	l.cpvUID = string(inSync.Obj.GetUID())
	l.waitReport("a passing result", reportResult(reportPolicy, "pass"))
	l.show("1. in sync")

	// Report only: the drift stays (remediation Alert) and is reported.
	from := l.cpvs.Mark()
	l.editMemberCopy(editedImage)
	l.waitDrift(from)
	l.waitReport("a failing result naming the cluster and its drift", func(r *unstructured.Unstructured) bool {
		res := result(r, reportPolicy)
		msg, _ := res["message"].(string)
		return res["result"] == "fail" && strings.Contains(msg, cluster+": ModifiedOutOfBand") && strings.Contains(msg, imagePath)
	})
	l.show("2. edited in the member, reported")
	l.showYAML("CPV status", l.cpvs, l.cpvName, "status", "clusterVersions")
	l.showYAML("PolicyReport results", l.reports, l.cpvUID, "results")
	if img := l.memberImage(); img != editedImage {
		t.Fatalf("under Alert, with no resync policy, the member's image became %s", img)
	}

	// The closed loop: with the resync policy, the next edit is healed
	// through Kyverno, and the report clears.
	l.install(resyncFile)
	from = l.cpvs.Mark()
	l.editMemberCopy("nginx:hotfix-2")
	l.waitDrift(from)
	first := l.waitHealed("")
	l.waitReportCleared(reportPolicy, first.at)
	l.show("3. resync policy installed, edited again: healed through Kyverno")

	// Each drift episode gets a new resync value.
	from = l.cpvs.Mark()
	l.editMemberCopy(editedImage)
	l.waitDrift(from)
	second := l.waitHealed(first.value)
	l.show("4. edited a third time: healed again, with a new resync value")
	l.checkNoLoop(second)
}

// heal is what waitHealed saw: the FederatedDeployment with the resync
// value Kyverno set, when the CPV showed it recorded, and the positions in
// the histories of both after those versions.
type heal struct {
	fd      *unstructured.Unstructured
	value   string
	at      time.Time
	fdNext  int
	cpvNext int
}

// checkNoLoop watches, for noLoopWindow after heal h, that nothing repeats
// or undoes it: the FederatedDeployment keeps its spec and resync value,
// the CPV stays InSync with that value, and the member's copy is not
// written again (no controller runs in the member; only Fedwarden writes
// it). A loop, Kyverno setting value after value, would fail all three.
func (l *loop) checkNoLoop(h heal) {
	l.t.Helper()
	ctx := l.t.Context()
	before, err := l.member.AppsV1().Deployments(l.ns).Get(ctx, l.fdName, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	generation := h.fd.GetGeneration()
	err = l.fds.Hold(ctx, l.fdName, h.fdNext, noLoopWindow, func(fd *unstructured.Unstructured) bool {
		return fd.GetAnnotations()[resyncKey] == h.value && fd.GetGeneration() == generation
	})
	if err != nil {
		l.t.Fatalf("the FederatedDeployment changed within %s of the heal (%s %s, generation %d): %v", noLoopWindow, resyncKey, h.value, generation, err)
	}
	if err := l.cpvs.Hold(ctx, l.cpvName, h.cpvNext, 0, l.inSyncWith(h.value)); err != nil {
		l.t.Fatalf("the CPV left InSync with resync %s within %s of the heal: %v", h.value, noLoopWindow, err)
	}
	after, err := l.member.AppsV1().Deployments(l.ns).Get(ctx, l.fdName, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		l.t.Fatalf("the member's copy was written within %s of the heal: resourceVersion %s, then %s (image %s)",
			noLoopWindow, before.ResourceVersion, after.ResourceVersion, after.Spec.Template.Spec.Containers[0].Image)
	}
	l.t.Logf("no loop: nothing written for %s after the heal", noLoopWindow)
}

// inSyncWith tells whether a CPV shows the member InSync, the resync value
// recorded.
func (l *loop) inSyncWith(value string) func(*unstructured.Unstructured) bool {
	return func(cpv *unstructured.Unstructured) bool {
		resync, _, _ := unstructured.NestedString(cpv.Object, "status", "resync")
		return entry(cpv, l.bed.Clusters[0])["state"] == "InSync" && resync == value
	}
}

// waitDrift waits for the CPV, after position from, to show the edit.
func (l *loop) waitDrift(from int) {
	l.t.Helper()
	l.waitCPV(from, "ModifiedOutOfBand on the image, by kubectl-edit, remediation Alert", func(cpv *unstructured.Unstructured) bool {
		cv := entry(cpv, l.bed.Clusters[0])
		return cv["state"] == "ModifiedOutOfBand" && cv["remediation"] == "Alert" &&
			contains(cv["changedPaths"], imagePath) && contains(cv["changedBy"], "kubectl-edit")
	})
}

// waitHealed waits until Kyverno sets a resync value other than previous
// on the FederatedDeployment, the member's copy has the desired image
// again, and the CPV is InSync having recorded the value.
func (l *loop) waitHealed(previous string) heal {
	l.t.Helper()
	fd, fdNext, err := l.fds.Wait(l.t.Context(), l.fdName, 0, wait, func(fd *unstructured.Unstructured) bool {
		v := fd.GetAnnotations()[resyncKey]
		return strings.HasPrefix(v, "kyverno-") && v != previous
	})
	if err != nil {
		l.t.Fatalf("Kyverno did not set a new %s on the FederatedDeployment: %v", resyncKey, err)
	}
	value := fd.Obj.GetAnnotations()[resyncKey]
	l.t.Logf("Kyverno set %s: %s", resyncKey, value)
	l.waitMemberImage(desiredImage)
	healed, cpvNext := l.waitCPV(0, "InSync with the resync value recorded", l.inSyncWith(value))
	return heal{fd: fd.Obj, value: value, at: healed.At, fdNext: fdNext, cpvNext: cpvNext}
}

// waitReportCleared waits until the PolicyReport passes the CPV again
// after a heal seen at healedAt, and fails the test if it does not. Kyverno
// (v1.19.1) merges the results of a policy for a resource keeping the one
// with the later timestamp in whole seconds, and the first seen on a tie
// (MergeReports in pkg/controllers/report/aggregate/utils.go): when the
// drift and the heal were admitted in the same second, the failing result
// stays until the CPV's next write. So when the report still fails after
// reportSettle with a result no later than the heal, the test writes the
// CPV, as Fedwarden's next status write would, and then the report must
// pass. A failing result stamped after the heal fails the test.
func (l *loop) waitReportCleared(policy string, healedAt time.Time) {
	l.t.Helper()
	pass := reportResult(policy, "pass")
	_, err := l.reports.WaitLatest(l.t.Context(), l.cpvUID, reportSettle, pass)
	if err == nil {
		return
	}
	latest, _ := l.reports.Latest(l.cpvUID)
	res := result(latest, policy)
	at, _, _ := unstructured.NestedInt64(res, "timestamp", "seconds")
	// The heal is seen by the test's watch after Kyverno admitted it, later
	// still on a loaded machine: a failing result stamped no later than
	// that is the drift's, kept on a tie or a missed admission.
	if healed := healedAt.Unix(); res["result"] == "fail" && at <= healed {
		l.t.Logf("the failing result (%d) is not later than the heal seen at %s: Kyverno keeps it until the CPV's next write; writing it",
			at, healedAt.UTC().Format(time.RFC3339Nano))
		l.touchCPV()
	}
	if _, err := l.reports.WaitLatest(l.t.Context(), l.cpvUID, wait, pass); err != nil {
		l.t.Fatalf("the PolicyReport of the CPV does not pass it again: %v", err)
	}
}

// touchCPV writes the CPV without changing what the policies read: an
// annotation with the time. Kyverno admits the write and reports on the
// CPV as it is, InSync.
func (l *loop) touchCPV() {
	l.t.Helper()
	dyn, err := dynamic.NewForConfig(l.bed.Fed.Host.Config)
	if err != nil {
		l.t.Fatal(err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.fedwarden.io/touched":%q}}}`, time.Now().UTC().Format(time.RFC3339Nano))
	if _, err := dyn.Resource(cpvResource).Namespace(l.ns).Patch(l.t.Context(), l.cpvName, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		l.t.Fatalf("writing the CPV: %v", err)
	}
}

// install creates the policies of file and waits until Kyverno has them
// ready; they are deleted when the test ends.
func (l *loop) install(file string) {
	l.t.Helper()
	policies, err := kyvernotest.Read(file)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.bed.Host.Create(l.t.Context(), policies); err != nil {
		l.t.Fatal(err)
	}
	l.t.Cleanup(func() {
		if err := l.bed.Host.Delete(context.Background(), policies); err != nil {
			l.t.Error(err)
		}
	})
	if err := l.bed.Host.WaitReady(l.t.Context(), policies, 2*time.Minute); err != nil {
		l.t.Fatal(err)
	}
}

// newLoop creates a namespace in the host and the member, and watches the
// CPVs, FederatedDeployments and PolicyReports there.
func newLoop(t *testing.T, bed *kyvernotest.Bed) *loop {
	t.Helper()
	ctx := t.Context()
	l := &loop{t: t, bed: bed, ns: "loop-" + t.Name()[strings.LastIndex(t.Name(), "/")+1:], fdName: "web", cpvName: "deployment-web"}
	host, err := kubernetes.NewForConfig(bed.Fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	if l.member, err = kubernetes.NewForConfig(bed.Fed.Members[0].Config); err != nil {
		t.Fatal(err)
	}
	for _, c := range []kubernetes.Interface{host, l.member} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: l.ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpKyvernoState(t, bed, l.ns)
		}
	})
	cfg := bed.Fed.Host.Config
	for _, w := range []struct {
		r   **kyvernotest.Recorder
		gvr schema.GroupVersionResource
	}{{&l.cpvs, cpvResource}, {&l.fds, fdResource}, {&l.reports, reportResource}} {
		if *w.r, err = kyvernotest.Record(ctx, cfg, w.gvr, l.ns); err != nil {
			t.Fatal(err)
		}
	}
	return l
}

// createFederatedDeployment creates FederatedDeployment web, placed on the
// first member.
func (l *loop) createFederatedDeployment() {
	fd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedDeployment",
		"metadata": map[string]any{"name": l.fdName, "namespace": l.ns},
		"spec": map[string]any{
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": l.fdName}},
				"spec": map[string]any{
					"replicas": int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": l.fdName}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": l.fdName}},
						"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": desiredImage}}},
					},
				},
			},
			"placement": map[string]any{"clusters": []any{map[string]any{"name": l.bed.Clusters[0]}}},
		},
	}}
	if err := l.bed.Host.Create(l.t.Context(), kyvernotest.Manifests{fd}); err != nil {
		l.t.Fatal(err)
	}
}

// editMemberCopy sets the image of the member's copy as kubectl edit
// would: an update by another field manager.
func (l *loop) editMemberCopy(image string) {
	l.t.Helper()
	deployments := l.member.AppsV1().Deployments(l.ns)
	deadline := time.Now().Add(wait)
	for {
		d, err := deployments.Get(l.t.Context(), l.fdName, metav1.GetOptions{})
		if err == nil {
			d.Spec.Template.Spec.Containers[0].Image = image
			if _, err = deployments.Update(l.t.Context(), d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("editing the member's copy: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // a conflict: read again
	}
}

// memberImage returns the image of the member's copy.
func (l *loop) memberImage() string {
	l.t.Helper()
	d, err := l.member.AppsV1().Deployments(l.ns).Get(l.t.Context(), l.fdName, metav1.GetOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// waitMemberImage waits until the member's copy has image.
func (l *loop) waitMemberImage(image string) {
	l.t.Helper()
	deadline := time.Now().Add(wait)
	for {
		d, err := l.member.AppsV1().Deployments(l.ns).Get(l.t.Context(), l.fdName, metav1.GetOptions{})
		if err == nil && d.Spec.Template.Spec.Containers[0].Image == image {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("the member's copy does not have %s after %s: %v", image, wait, describeDeployment(d, err))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func describeDeployment(d *appsv1.Deployment, err error) string {
	if err != nil {
		return err.Error()
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// waitCPV waits for a version of the CPV, from position from of its
// history, that satisfies ok.
func (l *loop) waitCPV(from int, what string, ok func(*unstructured.Unstructured) bool) (kyvernotest.Seen, int) {
	l.t.Helper()
	s, next, err := l.cpvs.Wait(l.t.Context(), l.cpvName, from, wait, ok)
	if err != nil {
		l.t.Fatalf("waiting for the CPV: %s: %v", what, err)
	}
	return s, next
}

// waitReport waits until the PolicyReport of the CPV (named after its UID)
// satisfies ok.
func (l *loop) waitReport(what string, ok func(*unstructured.Unstructured) bool) {
	l.t.Helper()
	if _, err := l.reports.WaitLatest(l.t.Context(), l.cpvUID, wait, ok); err != nil {
		l.t.Fatalf("waiting for the PolicyReport of the CPV: %s: %v", what, err)
	}
}

// show logs what kubectl get cpv and kubectl get policyreport print now.
func (l *loop) show(step string) {
	l.t.Helper()
	var b strings.Builder
	for _, r := range []struct {
		name string
		gvr  schema.GroupVersionResource
	}{{"cpv", cpvResource}, {"policyreport", reportResource}} {
		table, err := kyvernotest.Table(l.t.Context(), l.bed.Fed.Host.Config, r.gvr, l.ns)
		if err != nil {
			l.t.Fatal(err)
		}
		fmt.Fprintf(&b, "$ kubectl get %s -n %s\n%s", r.name, l.ns, table)
	}
	l.t.Logf("%s\n%s", step, b.String())
}

// showYAML logs the field at path of the latest version of name, as
// kubectl get -o yaml shows it.
func (l *loop) showYAML(what string, r *kyvernotest.Recorder, name string, path ...string) {
	l.t.Helper()
	obj, _ := r.Latest(name)
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, path...)
	out, err := yaml.Marshal(v)
	if err != nil {
		l.t.Fatal(err)
	}
	l.t.Logf("%s (.%s):\n%s", what, strings.Join(path, "."), out)
}

// entry returns the status.clusterVersions entry of cluster.
func entry(cpv *unstructured.Unstructured, cluster string) map[string]any {
	cvs, _, _ := unstructured.NestedSlice(cpv.Object, "status", "clusterVersions")
	for _, cv := range cvs {
		if m, ok := cv.(map[string]any); ok && m["clusterName"] == cluster {
			return m
		}
	}
	return map[string]any{}
}

// result returns the report's result of policy.
func result(report *unstructured.Unstructured, policy string) map[string]any {
	results, _, _ := unstructured.NestedSlice(report.Object, "results")
	for _, r := range results {
		if m, ok := r.(map[string]any); ok && m["policy"] == policy {
			return m
		}
	}
	return map[string]any{}
}

func reportResult(policy, want string) func(*unstructured.Unstructured) bool {
	return func(r *unstructured.Unstructured) bool { return result(r, policy)["result"] == want }
}

// contains tells whether v, a list of strings, holds s.
func contains(v any, s string) bool {
	list, _ := v.([]any)
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
