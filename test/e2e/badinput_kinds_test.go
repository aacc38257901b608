package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// healWithin bounds how long a refused cluster takes to get its copy once
// the cause is gone: the next retry (--propagation-retry-period, 30 s by
// default, the shared bed's), and room for a loaded machine.
const healWithin = 30*time.Second + loadSlack

// A kind that a member's RBAC does not grant Fedwarden: the member joined
// with --resources that leave Deployments out (the same rights as a member
// that joined before a kind was installed there, which join grants only
// the kinds it serves). That cluster's entry says Forbidden (state
// ApplyFailed in the CPV, not Unreachable: the member answers), with the
// member's answer and to join again, and one Warning Event says the same;
// the controller-manager logs nothing about it. Nothing is written to that
// member, and the other cluster's copy and another resource's copies are
// untouched through three resyncs. Joining the cluster again grants the
// kind: the copy is created and the entry turns InSync, with no restart,
// and the other cluster's copy is not written.
func TestAKindAMemberForbidsIsReportedAndHarmsNothingElse(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	const own = "own-forbids"
	member := joinOwnMember(t, own, "--resources", "configmaps")
	ownClient := newClient(t, member.Config)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(own, m1)))
	createObject(t, host, newFederatedDeployment(t, ns, "other", 0, placedOn(m1, m2)))
	waitForCPV(t, host, ns, "deployment-other", "1", "1", m1, m2)

	refusal := "cluster " + own + " refuses Fedwarden access to deployments.apps: deployments.apps is forbidden"
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		m1:  {reason: typesv1beta1.ClusterPropagated},
		own: {reason: typesv1beta1.ClusterForbidden, message: refusal},
	})
	entry := waitForEntry(t, host, ns, "deployment-web", own, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.ApplyFailed && strings.Contains(cv.Message, refusal) && strings.Contains(cv.Message, "run 'fedwarden join "+own+"' again")
	})
	t.Logf("the CPV entry of %s: %s: %s", own, entry.State, entry.Message)
	waitForEntry(t, host, ns, "deployment-web", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
	waitForEvent(t, host, ns, "web", typesv1beta1.ClusterForbidden+": cluster "+own+": "+refusal, "cannot list resource", "run 'fedwarden join "+own+"' again")

	before := copiesOf(t, ns, "other")
	before[m1+"/web"] = copyStateOf(t, memberClient(t, 0), m1, ns, "web")
	writes := cm.applies(t, own)
	logged := logLinesAbout(t, own)
	refusals := eventCount(t, host, ns, "web", typesv1beta1.ClusterForbidden)
	waitForResyncs(t)
	after := copiesOf(t, ns, "other")
	after[m1+"/web"] = copyStateOf(t, memberClient(t, 0), m1, ns, "web")
	for k, was := range before {
		if after[k] != was {
			t.Errorf("%s: the copy was touched: %v, was %v", k, after[k], was)
		}
	}
	if got := cm.applies(t, own); got != writes {
		t.Errorf("%v writes to %s while it refuses the kind, want none", got-writes, own)
	}
	if got := eventCount(t, host, ns, "web", typesv1beta1.ClusterForbidden); got != refusals || got != 1 {
		t.Errorf("%d Forbidden Events of web after three resyncs, were %d; want one", got, refusals)
	}
	if got := logLinesAbout(t, own); got > logged+2 {
		t.Errorf("the controller-manager logged %d lines about %s in three resyncs", got-logged, own)
		logAbout(t, own)
	}
	checkNoEventStorm(t, host, ns, "web")
	if err := ownClient.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s holds a copy of web (%v), though it refuses the kind", own, err)
	}

	// Joining again grants every kind the member serves.
	rejoin(t, member, own)
	start := time.Now()
	poll.Eventually(t, healWithin, "the copy in "+own+" and its entry InSync", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "deployment-web")
		if err != nil {
			return false, err.Error()
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == own {
				return cv.State == typesv1beta1.InSync, fmt.Sprintf("%+v", cv)
			}
		}
		return false, fmt.Sprintf("%+v", cpv.Status)
	})
	t.Logf("InSync %s after joining again; Events of web: %q", time.Since(start).Round(100*time.Millisecond), eventsOf(t, host, ns, "web"))
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{
		m1:  {reason: typesv1beta1.ClusterPropagated},
		own: {reason: typesv1beta1.ClusterPropagated},
	})
	if got := copyStateOf(t, ownClient, own, ns, "web"); got.hash == "" {
		t.Errorf("%s: the copy of web = %v, want Fedwarden's", own, got)
	}
	if got := copyStateOf(t, memberClient(t, 0), m1, ns, "web"); got != before[m1+"/web"] {
		t.Errorf("%s: the copy of web was touched: %v, was %v", m1, got, before[m1+"/web"])
	}
}

// A CRD that a member's admin deletes while Fedwarden propagates its kind
// there, then installs again. The cluster's entry says KindNotServed (state
// ApplyFailed in the CPV), that the member does not serve the kind and
// that its CRD was removed, and one Warning Event says the same (two when
// the sync also saw the CRD being deleted); the controller-manager keeps
// running (an informer of the kind once ended it, with a panic, as the
// member's answers changed) and logs nothing about it. Nothing is written
// to that member meanwhile: a Deployment there, the copies in the other
// cluster and another resource's are untouched. Once the CRD is back the
// copies are created again and the entries turn InSync, with no restart;
// the other cluster's copies are not written.
func TestACRDRemovedFromAMemberIsReportedAndComesBack(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	installCRD(t, host, "the host", gizmoCRD)
	t.Cleanup(func() { _ = host.Delete(context.Background(), decode(t, gizmoCRD)) })
	if r := runFedwarden(t, "enable", gizmoType, "--host-kubeconfig", fed.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("fedwarden enable %s:\n%s", gizmoType, r)
	}
	t.Cleanup(func() {
		runFedwardenContext(context.Background(), t, "disable", gizmoType, "--delete-crd", "--force", "--host-kubeconfig", fed.Host.Kubeconfig)
	})
	// Both members serve Gizmos when they join, so join grants them.
	const a, b = "own-crd-gone", "own-crd-kept"
	ma, mb := ownMember(t, a), ownMember(t, b)
	ca, cb := newClient(t, ma.Config), newClient(t, mb.Config)
	installCRD(t, ca, a, gizmoCRD)
	installCRD(t, cb, b, gizmoCRD)
	for _, j := range []struct {
		m    *localfed.Cluster
		name string
	}{{ma, a}, {mb, b}} {
		rejoin(t, j.m, j.name)
		t.Cleanup(func() {
			if r := runFedwardenContext(context.Background(), t, unjoinArgs(fed, j.m, j.name)...); r.code != 0 {
				t.Errorf("unjoining %s:\n%s", j.name, r)
			}
		})
	}
	ns := testNamespace(t, host)
	m1 := fed.Members[0].Name
	gizmos := []*unstructured.Unstructured{newGizmo(t, ns, "g", a, b), newGizmo(t, ns, "other", a, b)}
	for _, g := range gizmos {
		createObject(t, host, g)
	}
	t.Cleanup(func() {
		// Before the type is disabled, while its controller deletes the copies.
		for _, g := range gizmos {
			_ = host.Delete(context.Background(), g)
		}
		for _, g := range gizmos {
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
				if err := host.Get(context.Background(), client.ObjectKeyFromObject(g), g.DeepCopy()); apierrors.IsNotFound(err) {
					break
				}
			}
		}
	})
	createObject(t, host, newFederatedDeployment(t, ns, "dep", 0, placedOn(a, m1)))
	waitForCPV(t, host, ns, "gizmo-g", "1", "1", a, b)
	waitForCPV(t, host, ns, "gizmo-other", "1", "1", a, b)
	waitForCPV(t, host, ns, "deployment-dep", "1", "1", m1, a)

	kept := map[string]string{}
	for _, name := range []string{"g", "other"} {
		kept[name] = gizmoState(t, cb, b, ns, name)
	}
	deps := map[string]copyState{a: copyStateOf(t, ca, a, ns, "dep"), m1: copyStateOf(t, memberClient(t, 0), m1, ns, "dep")}
	logged := logLinesAbout(t, a)

	removeCRD(t, ca, a, "gizmos.badinput.e2e.fedwarden.io")
	gone := "cluster " + a + " does not serve gizmos.badinput.e2e.fedwarden.io (version v1): its CustomResourceDefinition is not installed there, or was removed"
	for _, name := range []string{"g", "other"} {
		waitForOutcome(t, host, "FederatedGizmo", ns, name, metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
			a: {reason: typesv1beta1.ClusterKindNotServed, message: gone},
			b: {reason: typesv1beta1.ClusterPropagated},
		})
		entry := waitForEntry(t, host, ns, "gizmo-"+name, a, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.ApplyFailed && strings.Contains(cv.Message, gone)
		})
		t.Logf("the CPV entry of %s for %s: %s: %s", a, name, entry.State, entry.Message)
		// One KindNotServed Event for the cluster: the events library
		// merges a later note of the same reason and cluster ("is removing",
		// then "does not serve") into the first one's series.
		waitForEvent(t, host, ns, name, typesv1beta1.ClusterKindNotServed+": cluster "+a+": cluster "+a+" ", "CustomResourceDefinition")
	}

	writes := cm.applies(t, a)
	notServed := eventCount(t, host, ns, "g", typesv1beta1.ClusterKindNotServed)
	reconciles := reconcilesOf(t, "propagation-"+gizmoType)
	waitForResyncs(t)
	if got := cm.applies(t, a); got != writes {
		t.Errorf("%v writes to %s while it does not serve the kind, want none", got-writes, a)
	}
	// Not compared with notServed: the "does not serve" note may still be
	// on its way when the count before was read.
	if got := eventCount(t, host, ns, "g", typesv1beta1.ClusterKindNotServed); got > 2 {
		t.Errorf("%d KindNotServed Events of g after three resyncs, were %d; want one per change (at most two)", got, notServed)
	}
	// Two resources, three resyncs and a retry each, and two more syncs
	// for each cluster another test joins, unjoins or sees change Ready
	// meanwhile: a spinning controller would sync them hundreds of times.
	if got := reconcilesOf(t, "propagation-"+gizmoType) - reconciles; got > 100 {
		t.Errorf("%v syncs of two FederatedGizmos in three resyncs", got)
	}
	checkNoEventStorm(t, host, ns, "g")
	checkUntouched := func(t *testing.T) {
		t.Helper()
		for _, name := range []string{"g", "other"} {
			if got := gizmoState(t, cb, b, ns, name); got != kept[name] {
				t.Errorf("%s: the copy of %s was touched: %s, was %s", b, name, got, kept[name])
			}
		}
		for where, c := range map[string]client.Client{a: ca, m1: memberClient(t, 0)} {
			if got := copyStateOf(t, c, where, ns, "dep"); got != deps[where] {
				t.Errorf("%s: the Deployment dep was touched: %v, was %v", where, got, deps[where])
			}
		}
	}
	checkUntouched(t)
	if got := logLinesAbout(t, a); got > logged+2 {
		t.Errorf("the controller-manager logged %d lines about %s since the CRD was removed", got-logged, a)
		logAbout(t, a)
	}

	installCRD(t, ca, a, gizmoCRD)
	start := time.Now()
	for _, name := range []string{"g", "other"} {
		poll.Eventually(t, healWithin, fmt.Sprintf("the copy of %s back in %s and its entry InSync", name, a), func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, host, ns, "gizmo-"+name)
			if err != nil {
				return false, err.Error()
			}
			state, err := gizmoStateOf(ctx, ca, ns, name)
			if err != nil {
				return false, err.Error()
			}
			for _, cv := range cpv.Status.ClusterVersions {
				if string(cv.ClusterName) == a {
					return cv.State == typesv1beta1.InSync && state != "absent", fmt.Sprintf("copy %s, entry %+v", state, cv)
				}
			}
			return false, fmt.Sprintf("copy %s, CPV %+v", state, cpv.Status)
		})
		waitForOutcome(t, host, "FederatedGizmo", ns, name, metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{
			a: {reason: typesv1beta1.ClusterPropagated},
			b: {reason: typesv1beta1.ClusterPropagated},
		})
	}
	t.Logf("the copies back and InSync %s after the CRD was installed again; Events of g: %q", time.Since(start).Round(100*time.Millisecond), eventsOf(t, host, ns, "g"))
	checkUntouched(t)
}

// eventCount counts the Events of the federated resource name of reason,
// with their repetitions.
func eventCount(t *testing.T, c client.Client, namespace, name, reason string) int32 {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var n int32
	for _, e := range list.Items {
		if e.InvolvedObject.Name != name || e.Reason != reason {
			continue
		}
		count := max(e.Count, 1)
		if e.Series != nil {
			count = max(count, e.Series.Count)
		}
		n += count
	}
	return n
}

// reconcilesOf is how many syncs the shared controller-manager's
// controller has run.
func reconcilesOf(t *testing.T, controller string) float64 {
	t.Helper()
	v, _ := cm.series(t, "controller_runtime_reconcile_total", fmt.Sprintf("controller=%q", controller))
	return v
}

// gizmoState is gizmoStateOf for a copy that must be there.
func gizmoState(t *testing.T, c client.Client, where, namespace, name string) string {
	t.Helper()
	s, err := gizmoStateOf(t.Context(), c, namespace, name)
	if err != nil || s == "absent" {
		t.Fatalf("%s: reading Gizmo %s/%s: %s %v", where, namespace, name, s, err)
	}
	return s
}

// waitForOutcome is waitForFederatedStatus for a federated resource of
// any kind.
func waitForOutcome(t *testing.T, c client.Client, kind, namespace, name string, status metav1.ConditionStatus, reason string, want map[string]clusterOutcome) {
	t.Helper()
	poll.Eventually(t, settleWithin, fmt.Sprintf("%s %s/%s: Propagated=%s (%s) with clusters %v", kind, namespace, name, status, reason, want), func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("types.kubefed.io/v1beta1")
		obj.SetKind(kind)
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		var st typesv1beta1.FederatedStatus
		if raw, found, _ := unstructured.NestedMap(obj.Object, "status"); found {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
				return false, err.Error()
			}
		}
		state := fmt.Sprintf("generation %d, status %+v", obj.GetGeneration(), st)
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
		if st.ObservedGeneration != obj.GetGeneration() || cond == nil || cond.Status != status || cond.Reason != reason || len(st.Clusters) != len(want) {
			return false, state
		}
		for _, cl := range st.Clusters {
			w, ok := want[string(cl.Name)]
			if !ok || cl.Reason != w.reason || !strings.Contains(cl.Message, w.message) {
				return false, state
			}
		}
		return true, state
	})
}

// gizmoCRD is the CustomResourceDefinition of a kind of the test's own.
const gizmoCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.badinput.e2e.fedwarden.io}
spec:
  group: badinput.e2e.fedwarden.io
  names: {kind: Gizmo, plural: gizmos, singular: gizmo, listKind: GizmoList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`

// gizmoType is the FederatedTypeConfig of Gizmos.
const gizmoType = "gizmos.badinput.e2e.fedwarden.io"

// installCRD creates the CRD of manifest in the cluster c and waits until
// it is Established.
func installCRD(t *testing.T, c client.Client, where, manifest string) {
	t.Helper()
	createObject(t, c, decode(t, manifest))
	name := decode(t, manifest).GetName()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("CRD %s to be Established in %s", name, where), func(ctx context.Context) (bool, string) {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
			return false, err.Error()
		}
		for _, cond := range crd.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", crd.Status.Conditions)
	})
}

// removeCRD deletes the CRD name from the cluster c, as a member's admin
// would, and waits until it is gone (with every object of its kind).
func removeCRD(t *testing.T, c client.Client, where, name string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	crd.Name = name
	if err := c.Delete(t.Context(), crd); err != nil {
		t.Fatalf("deleting CRD %s in %s: %v", name, where, err)
	}
	waitForAbsent(t, c, crd, where, time.Minute)
}

// newGizmo is a FederatedGizmo placed on clusters.
func newGizmo(t *testing.T, namespace, name string, clusters ...string) *unstructured.Unstructured {
	t.Helper()
	return decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedGizmo
metadata: {name: %s, namespace: %s}
spec:
  template: {spec: {size: 3}}
%s
`, name, namespace, placedOn(clusters...)))
}

// gizmoStateOf reads the Gizmo namespace/name in the cluster c: what tells
// that it was left alone (Fedwarden's writes aside, nothing else writes a
// Gizmo, so its resourceVersion is one too); "absent" when there is none.
func gizmoStateOf(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	g := &unstructured.Unstructured{}
	g.SetAPIVersion("badinput.e2e.fedwarden.io/v1")
	g.SetKind("Gizmo")
	err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, g)
	switch {
	case apierrors.IsNotFound(err) || (err != nil && strings.Contains(err.Error(), "no matches for kind")):
		return "absent", nil
	case err != nil:
		return "", err
	}
	return fmt.Sprintf("uid %s, resourceVersion %s, hash %s, %s", g.GetUID(), g.GetResourceVersion(),
		g.GetAnnotations()[typesv1beta1.AnnotationDesiredHash], fedwardenWrite(g)), nil
}

// logLinesAbout counts the lines of the shared controller-manager's log
// that mention s.
func logLinesAbout(t *testing.T, s string) int {
	t.Helper()
	data, err := os.ReadFile(cm.logPath)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

// logAbout logs the lines of the shared controller-manager's log that
// mention s.
func logAbout(t *testing.T, s string) {
	t.Helper()
	data, err := os.ReadFile(cm.logPath)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if strings.Contains(line, s) {
			t.Log(strings.TrimSpace(line))
		}
	}
}
