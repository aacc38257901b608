package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// deploymentsTypeConfig is the FederatedTypeConfig of Deployments that
// enableDeployments creates in the shared test bed.
const deploymentsTypeConfig = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: deployments.apps}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  statusCollection: Enabled
  targetType: {group: apps, kind: Deployment, pluralName: deployments, scope: Namespaced, version: v1}
`

// propagationController is the name the controller-manager gives the
// propagation controller of Deployments in its metrics.
const propagationController = "propagation-deployments.apps"

// restartBed is a test bed of its own, for tests that restart the
// controller-manager or stop a member.
type restartBed struct {
	*localfed.Federation
	bed  *fedtest.Bed
	host client.Client
	cm   *controllerManager
}

// startRestartBed starts a host and two members, a controller-manager,
// joins both members and enables Deployments. The members run no
// deployment controller: only Fedwarden writes their Deployments, so a
// resourceVersion that moves is a Fedwarden write. The bed's tests stop a
// member and wait until it is not Ready: it probes with quickProbes.
func startRestartBed(t *testing.T) *restartBed {
	t.Helper()
	fb, cm := startJoinedBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(2), localfed.WithControllers(fedtest.JoinControllers...)}}, quickProbes)
	bed := &restartBed{Federation: fb.Fed, bed: fb, host: fb.Host, cm: cm}
	enableDeploymentsIn(t, bed.host)
	return bed
}

// enableDeploymentsIn creates the FederatedTypeConfig of Deployments in a
// bed of its own and waits until its propagation controller runs.
func enableDeploymentsIn(t *testing.T, host client.Client) {
	t.Helper()
	createObject(t, host, decode(t, deploymentsTypeConfig))
	poll.Eventually(t, time.Minute, "deployments.apps to be Running", func(ctx context.Context) (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := host.Get(ctx, types.NamespacedName{Name: "deployments.apps"}, ftc); err != nil {
			return false, err.Error()
		}
		return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
	})
}

// startControllerManager starts a controller-manager on the bed, stopped
// when the test ends, probing with quickProbes.
func (b *restartBed) startControllerManager(t *testing.T) {
	t.Helper()
	b.cm = startControllerManager(t, b.bed, quickProbes)
}

// memberVersions returns the resourceVersion of every Deployment of
// namespace in each member, by member and name.
func (b *restartBed) memberVersions(t *testing.T, namespace string) map[string]map[string]string {
	t.Helper()
	rvs := map[string]map[string]string{}
	for _, m := range b.Members {
		var list appsv1.DeploymentList
		if err := newClient(t, m.Config).List(t.Context(), &list, client.InNamespace(namespace)); err != nil {
			t.Fatalf("listing Deployments in %s: %v", m.Name, err)
		}
		rvs[m.Name] = map[string]string{}
		for _, d := range list.Items {
			rvs[m.Name][d.Name] = d.ResourceVersion
		}
	}
	return rvs
}

// hostVersions returns the resourceVersion of every FederatedDeployment
// and CPV of namespace on the host, by kind and name.
func (b *restartBed) hostVersions(t *testing.T, namespace string) map[string]map[string]string {
	t.Helper()
	rvs := map[string]map[string]string{"FederatedDeployment": {}, "ClusterPropagatedVersion": {}}
	fds := &unstructured.UnstructuredList{}
	fds.SetAPIVersion("types.kubefed.io/v1beta1")
	fds.SetKind("FederatedDeploymentList")
	if err := b.host.List(t.Context(), fds, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds.Items {
		rvs["FederatedDeployment"][fd.GetName()] = fd.GetResourceVersion()
	}
	var cpvs typesv1beta1.ClusterPropagatedVersionList
	if err := b.host.List(t.Context(), &cpvs, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	for _, cpv := range cpvs.Items {
		rvs["ClusterPropagatedVersion"][cpv.Name] = cpv.ResourceVersion
	}
	return rvs
}

// changedVersions lists what differs between two memberVersions.
func changedVersions(before, after map[string]map[string]string) []string {
	var changed []string
	for member, rvs := range before {
		for name, rv := range rvs {
			if after[member][name] != rv {
				changed = append(changed, fmt.Sprintf("%s %s: %s → %s", member, name, rv, after[member][name]))
			}
		}
		for name := range after[member] {
			if _, ok := rvs[name]; !ok {
				changed = append(changed, fmt.Sprintf("%s %s: new", member, name))
			}
		}
	}
	return changed
}

// onlyBoth tells whether changed, from changedVersions, lists the copies
// of name in both members and nothing else.
func onlyBoth(changed []string, name string) bool {
	return len(changed) == 2 && !slices.ContainsFunc(changed, func(c string) bool { return !strings.Contains(c, " "+name+": ") })
}

// waitForAllInSync waits until each of the named CPVs is at templateVersion
// and InSync on every member.
func (b *restartBed) waitForAllInSync(t *testing.T, namespace string, names []string, templateVersion string) {
	t.Helper()
	poll.Eventually(t, 2*time.Minute, fmt.Sprintf("%d CPVs in sync at template version %s on both members", len(names), templateVersion), func(ctx context.Context) (bool, string) {
		var list typesv1beta1.ClusterPropagatedVersionList
		if err := b.host.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return false, err.Error()
		}
		byName := map[string]typesv1beta1.ClusterPropagatedVersion{}
		for _, cpv := range list.Items {
			byName[cpv.Name] = cpv
		}
		var behind []string
		for _, name := range names {
			st := byName["deployment-"+name].Status
			ok := string(st.TemplateVersion) == templateVersion && len(st.ClusterVersions) == len(b.Members)
			for _, cv := range st.ClusterVersions {
				ok = ok && cv.State == typesv1beta1.InSync && string(cv.TemplateVersion) == templateVersion
			}
			if !ok {
				behind = append(behind, name)
			}
		}
		return len(behind) == 0, fmt.Sprintf("%d not in sync: %v", len(behind), behind)
	})
}

// series returns the sum of the values of metric name over the series whose
// labels contain every one of labels (each `key="value"`), and whether there
// is one.
func (cm *controllerManager) series(t *testing.T, name string, labels ...string) (float64, bool) {
	t.Helper()
	v, ok, err := cm.sum(t.Context(), name, labels...)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func (cm *controllerManager) sum(ctx context.Context, name string, labels ...string) (float64, bool, error) {
	return cm.Sum(ctx, name, labels...)
}

// applies counts the controller-manager's apply writes to a member.
func (cm *controllerManager) applies(t *testing.T, member string) float64 {
	t.Helper()
	v, _ := cm.series(t, "fedwarden_member_writes_total", fmt.Sprintf("cluster=%q", member), `verb="apply"`)
	return v
}

// steadyFor is how long the propagation controller must stay idle, with
// its counters unchanged, before waitForSteady trusts that it is done.
const steadyFor = 3 * time.Second

// waitForSteady waits until the propagation controller has finished at
// least reconciles syncs and is steady: nothing queued or running, and no
// new sync or member write, over at least three scrapes spanning steadyFor.
// One idle scrape is not enough: the queue is also empty for a moment
// between two syncs of a burst, and between a write and the watch event it
// causes.
func (cm *controllerManager) waitForSteady(t *testing.T, reconciles float64) {
	t.Helper()
	ctrl := fmt.Sprintf("controller=%q", propagationController)
	var (
		last    string
		since   time.Time
		scrapes int
	)
	poll.Eventually(t, 2*time.Minute, fmt.Sprintf("the propagation controller to be idle for %s", steadyFor), func(ctx context.Context) (bool, string) {
		done, _, err := cm.sum(ctx, "controller_runtime_reconcile_total", ctrl)
		if err != nil {
			return false, err.Error() // not serving yet
		}
		depth, okDepth, errDepth := cm.sum(ctx, "workqueue_depth", ctrl)
		active, okActive, errActive := cm.sum(ctx, "controller_runtime_active_workers", ctrl)
		writes, _, errWrites := cm.sum(ctx, "fedwarden_member_writes_total")
		if err := errors.Join(errDepth, errActive, errWrites); err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("%v reconciles, %v member writes, queue depth %v (exported: %v), active workers %v (exported: %v)", done, writes, depth, okDepth, active, okActive)
		if done < reconciles || !okDepth || depth != 0 || !okActive || active != 0 {
			last = ""
			return false, state
		}
		if state != last {
			last, since, scrapes = state, time.Now(), 0
		}
		scrapes++
		return scrapes >= 3 && time.Since(since) >= steadyFor, fmt.Sprintf("%s, for %s", state, time.Since(since).Round(time.Millisecond))
	})
}

func setImage(t *testing.T, image string) func(*unstructured.Unstructured) {
	return func(obj *unstructured.Unstructured) {
		containers, _, err := unstructuredSlice(obj.Object, "spec", "template", "spec", "template", "spec", "containers")
		if err != nil || len(containers) == 0 {
			t.Fatalf("reading the template's containers: %v", err)
		}
		containers[0].(map[string]any)["image"] = image
		setNested(t, obj.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
	}
}

// A new controller-manager takes over 50 propagated FederatedDeployments
// without writing to a member; afterwards a template change writes once
// per member. Then a member goes offline during an update: its CPV entry
// says Unreachable and keeps the version it has while the other member
// moves on, and it catches up when it is back, with that one write. This
// test restarts a controller-manager and a member, so it has a test bed of
// its own.
func TestRestartAndOfflineWriteOnlyWhatChanged(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startRestartBed(t)
	ns := testNamespace(t, bed.host)
	m1, m2 := bed.Members[0].Name, bed.Members[1].Name
	var names []string
	for i := range 50 {
		name := fmt.Sprintf("web-%02d", i)
		names = append(names, name)
		createObject(t, bed.host, newFederatedDeployment(t, ns, name, 0, placedOn(m1, m2)))
	}
	bed.waitForAllInSync(t, ns, names, "1")
	before, hostBefore := bed.memberVersions(t, ns), bed.hostVersions(t, ns)
	for _, m := range bed.Members {
		if n := len(before[m.Name]); n != len(names) {
			t.Fatalf("%s has %d Deployments in %s, want %d", m.Name, n, ns, len(names))
		}
	}

	// Restart: the new controller-manager syncs every resource again and
	// finds every member copy, CPV and status current.
	if err := bed.cm.stop(); err != nil {
		t.Fatal(err)
	}
	bed.startControllerManager(t)
	bed.cm.waitForSteady(t, float64(len(names)))
	if changed := changedVersions(before, bed.memberVersions(t, ns)); len(changed) > 0 {
		t.Errorf("the restarted controller-manager wrote %d member Deployments: %v", len(changed), changed)
	}
	if changed := changedVersions(hostBefore, bed.hostVersions(t, ns)); len(changed) > 0 {
		t.Errorf("the restarted controller-manager changed %d host objects: %v", len(changed), changed)
	}
	if writes, ok := bed.cm.series(t, "fedwarden_member_writes_total"); ok && writes != 0 {
		t.Errorf("the restarted controller-manager made %v writes to members, want none", writes)
	}
	t.Run("no write requests to the host", func(t *testing.T) {
		// Its writes to the host's objects are PATCHes (the leader-election
		// Lease and Event aside, which are PUT and POST).
		hostAddr := strings.TrimPrefix(bed.Host.Endpoint, "https://")
		if n, _ := bed.cm.series(t, "rest_client_requests_total", fmt.Sprintf("host=%q", hostAddr), `method="PATCH"`); n > 0 {
			t.Errorf("the restarted controller-manager sent %v PATCH requests to the host, want none", n)
		}
	})
	// It propagates a new FederatedDeployment: one write per member.
	createObject(t, bed.host, newFederatedDeployment(t, ns, "fresh", 0, placedOn(m1, m2)))
	waitForCPV(t, bed.host, ns, "deployment-fresh", "1", "1", m1, m2)
	bed.cm.waitForSteady(t, 0)
	for _, m := range bed.Members {
		if got := bed.cm.applies(t, m.Name); got != 1 {
			t.Errorf("the restarted controller-manager applied %v times to %s; want 1, for the new FederatedDeployment", got, m.Name)
		}
	}

	// One template change: one write per member.
	changedName := names[7]
	before = bed.memberVersions(t, ns)
	patchFederated(t, bed.host, ns, changedName, setImage(t, "nginx:1.28"))
	waitForCPV(t, bed.host, ns, "deployment-"+changedName, "2", "1", m1, m2)
	bed.cm.waitForSteady(t, 0)
	for _, m := range bed.Members {
		if got := bed.cm.applies(t, m.Name); got != 2 {
			t.Errorf("after one template change, %v applies to %s since the restart; want 2 (the new FederatedDeployment and the change)", got, m.Name)
		}
		d := &appsv1.Deployment{}
		if err := newClient(t, m.Config).Get(t.Context(), types.NamespacedName{Namespace: ns, Name: changedName}, d); err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" || d.Annotations[typesv1beta1.AnnotationTemplateVersion] != "2" {
			t.Errorf("%s: image %s, template version %q after the change; want nginx:1.28 and 2", m.Name, img, d.Annotations[typesv1beta1.AnnotationTemplateVersion])
		}
	}
	if changed := changedVersions(before, bed.memberVersions(t, ns)); !onlyBoth(changed, changedName) {
		t.Errorf("one template change of %s changed %d member Deployments, want its two copies: %v", changedName, len(changed), changed)
	}

	// Member-1 goes offline; the next template change reaches member-2
	// only, and member-1's entry says why it is behind.
	down := bed.Members[0]
	before = bed.memberVersions(t, ns)
	appliesBefore := bed.cm.applies(t, m1)
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, bed.host, m1, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, bed.cm.probes.failedWithin())
	patchFederated(t, bed.host, ns, changedName, setImage(t, "nginx:1.29"))
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("%s Unreachable at template version 2 and %s InSync at 3", m1, m2), func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, bed.host, ns, "deployment-"+changedName)
		if err != nil {
			return false, err.Error()
		}
		st := cpv.Status
		if st.TemplateVersion != "3" || len(st.ClusterVersions) != 2 {
			return false, fmt.Sprintf("%+v", st)
		}
		off, on := st.ClusterVersions[0], st.ClusterVersions[1]
		return off.State == typesv1beta1.Unreachable && off.TemplateVersion == "2" && strings.Contains(off.Message, "not Ready") &&
			on.State == typesv1beta1.InSync && on.TemplateVersion == "3", fmt.Sprintf("%+v", st)
	})
	waitForFederatedStatus(t, bed.host, ns, changedName, metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterUnreachable, message: "not Ready"},
		m2: {reason: typesv1beta1.ClusterPropagated},
	})

	// Back: member-1 gets the change, and nothing else.
	if err := fedtest.RestartCluster(t, down); err != nil {
		t.Fatal(err)
	}
	waitForCPV(t, bed.host, ns, "deployment-"+changedName, "3", "1", m1, m2)
	others := append(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == changedName }), "fresh")
	bed.waitForAllInSync(t, ns, others, "1")
	bed.cm.waitForSteady(t, 0)
	d := &appsv1.Deployment{}
	if err := newClient(t, down.Config).Get(t.Context(), types.NamespacedName{Namespace: ns, Name: changedName}, d); err != nil {
		t.Fatal(err)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.29" {
		t.Errorf("%s: image %s after it came back, want nginx:1.29", m1, img)
	}
	// Back, it had missed template version 3: that is drift, reported and
	// healed.
	waitForEvent(t, bed.host, ns, changedName, typesv1beta1.EventDriftDetected, m1, "OutdatedTemplate", "re-applied")
	waitForEvent(t, bed.host, ns, changedName, typesv1beta1.EventDriftResolved, m1)
	if got := bed.cm.applies(t, m1) - appliesBefore; got != 1 {
		t.Errorf("%v applies to %s from its going offline to its catching up; want 1", got, m1)
	}
	if changed := changedVersions(before, bed.memberVersions(t, ns)); !onlyBoth(changed, changedName) {
		t.Errorf("one template change of %s while %s was down changed %d member Deployments, want its two copies: %v", changedName, m1, len(changed), changed)
	}

	// Deleting a resource while a member is down: the deletion waits, and
	// says for which cluster, until the member is back.
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	waitForCondition(t, bed.host, m1, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, bed.cm.probes.failedWithin())
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"})
	fresh.SetNamespace(ns)
	fresh.SetName("fresh")
	if err := bed.host.Delete(t.Context(), fresh); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the deletion to say it waits for "+m1, func(ctx context.Context) (bool, string) {
		if err := bed.host.Get(ctx, client.ObjectKeyFromObject(fresh), fresh); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(fresh.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["reason"] == typesv1beta1.ReasonDeletionPending && strings.Contains(fmt.Sprint(m["message"]), m1) {
				return true, ""
			}
		}
		return false, fmt.Sprint(conds)
	})
	if err := fedtest.RestartCluster(t, down); err != nil {
		t.Fatal(err)
	}
	waitForAbsent(t, bed.host, fresh, "the host", 60*time.Second)
	waitForAbsent(t, newClient(t, down.Config), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}}, m1, 30*time.Second)
}
