package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// editImage changes the image of a member Deployment as a person with
// kubectl edit would: an update by another field manager.
func editImage(t *testing.T, c client.Client, namespace, name, image string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, "editing the member's Deployment", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		if err := c.Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
			return false, err.Error() // a conflict with the member's controllers: try again
		}
		return true, ""
	})
}

// memberImage returns the image of a member Deployment.
func memberImage(ctx context.Context, c client.Client, namespace, name string) (string, error) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		return "", err
	}
	return d.Spec.Template.Spec.Containers[0].Image, nil
}

// waitForEntry waits until the CPV entry of cluster satisfies ok.
func waitForEntry(t *testing.T, c client.Client, namespace, name, cluster string, ok func(typesv1beta1.ClusterVersion) bool) typesv1beta1.ClusterVersion {
	t.Helper()
	var entry typesv1beta1.ClusterVersion
	poll.Eventually(t, settleWithin, fmt.Sprintf("the CPV entry of %s for %s/%s", cluster, namespace, name), func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == cluster {
				entry = cv
				return ok(cv), fmt.Sprintf("%+v", cv)
			}
		}
		return false, fmt.Sprintf("no entry: %+v", cpv.Status)
	})
	return entry
}

// eventsOf returns the reason and message of every Event of the federated
// resource name.
func eventsOf(t *testing.T, c client.Client, namespace, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := c.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name {
			out = append(out, e.Reason+": "+e.Message)
		}
	}
	return out
}

// waitForEvent waits for an Event of name whose reason and message contain
// every part.
func waitForEvent(t *testing.T, c client.Client, namespace, name string, parts ...string) {
	t.Helper()
	poll.Eventually(t, settleWithin, fmt.Sprintf("an Event of %s saying %q", name, parts), func(context.Context) (bool, string) {
		events := eventsOf(t, c, namespace, name)
		return slices.ContainsFunc(events, func(e string) bool {
			return !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(e, p) })
		}), fmt.Sprint(events)
	})
}

const imagePath = "/spec/template/spec/containers/0/image"

// Under Enforce (the default), a hand edit of a member's copy is found,
// reported with the path and who made it, and written back; the other
// member is not touched.
func TestDriftEnforcedIsHealed(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	member1, member2 := memberClient(t, 0), memberClient(t, 1)
	other := waitForSettled(t, member2, m2, ns, "web")

	editImage(t, member1, ns, "web", "nginx:evil")
	poll.Eventually(t, 30*time.Second, "the image to be written back", func(ctx context.Context) (bool, string) {
		img, err := memberImage(ctx, member1, ns, "web")
		return err == nil && img == "nginx:1.27", fmt.Sprint(img, err)
	})
	waitForEvent(t, host, ns, "web", typesv1beta1.EventDriftDetected, m1, "ModifiedOutOfBand", imagePath, "kubectl-edit", "re-applied")
	waitForEvent(t, host, ns, "web", typesv1beta1.EventDriftResolved, m1)
	healed := waitForEntry(t, host, ns, "deployment-web", m1, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.InSync && cv.Remediation == typesv1beta1.RemediationEnforce && len(cv.DriftHistory) > 0
	})
	// The ledger keeps the episode, credited to Enforce, and the duration
	// histogram counts it.
	ep := healed.DriftHistory[len(healed.DriftHistory)-1]
	if ep.ResolvedBy != typesv1beta1.ResolvedByEnforce || ep.State != typesv1beta1.ModifiedOutOfBand || !slices.Contains(ep.ChangedPaths, imagePath) ||
		!slices.Equal(ep.ChangedBy, []string{"kubectl-edit"}) || ep.End.Before(&ep.Start) || ep.After.TemplateVersion != "1" {
		t.Errorf("%s's last drift episode = %+v; want ModifiedOutOfBand at %s by kubectl-edit, resolved by Enforce", m1, ep, imagePath)
	}
	if v, ok := cm.metric(t, fmt.Sprintf("fedwarden_drift_duration_seconds_count{cluster=%q,state=\"ModifiedOutOfBand\"}", m1)); !ok || v < 1 {
		t.Errorf("fedwarden_drift_duration_seconds_count for %s = %v (exported: %v); want the healed episode counted", m1, v, ok)
	}
	if got, err := memberImage(t.Context(), member2, ns, "web"); err != nil || got != "nginx:1.27" {
		t.Errorf("%s's image = %s, %v", m2, got, err)
	}
	after := &appsv1.Deployment{}
	if err := member2.Get(t.Context(), client.ObjectKeyFromObject(other), after); err != nil || after.Generation != other.Generation {
		t.Errorf("%s's Deployment was written (generation %d → %d, %v)", m2, other.Generation, after.Generation, err)
	}
}

// Under Alert, the edit stays and is reported in the CPV (state, path,
// manager, since when), the DRIFTED counts and an Event; a new
// kubefed.io/resync value then writes it back.
func TestDriftAlertIsReportedThenResynced(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "api", 0, placedOn(m1, m2)+"\n  driftPolicy: {remediation: Alert}"))
	waitForCPV(t, host, ns, "deployment-api", "1", "1", m1, m2)
	member1 := memberClient(t, 0)
	waitForSettled(t, member1, m1, ns, "api")

	editImage(t, member1, ns, "api", "nginx:hotfix")
	entry := waitForEntry(t, host, ns, "deployment-api", m1, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.ModifiedOutOfBand
	})
	if !slices.Equal(entry.ChangedPaths, []string{imagePath}) || !slices.Equal(entry.ChangedBy, []string{"kubectl-edit"}) || entry.DriftedSince == nil || entry.Remediation != typesv1beta1.RemediationAlert {
		t.Errorf("CPV entry of %s = %+v, want %s changed by kubectl-edit, with driftedSince, remediation Alert", m1, entry, imagePath)
	}
	cpv, err := cpvOf(t.Context(), host, ns, "deployment-api")
	if err != nil {
		t.Fatal(err)
	}
	if *cpv.Status.DriftedClusters != 1 || !meta.IsStatusConditionTrue(cpv.Status.Conditions, typesv1beta1.CPVDrifted) {
		t.Errorf("CPV status = %+v, want 1 drifted cluster and Drifted=True", cpv.Status)
	}
	waitForEvent(t, host, ns, "api", typesv1beta1.EventDriftDetected, m1, imagePath, "left as it is")
	// Left alone, also through periodic resyncs.
	time.Sleep(2 * resyncPeriod)
	if img, err := memberImage(t.Context(), member1, ns, "api"); err != nil || img != "nginx:hotfix" {
		t.Fatalf("under Alert, %s's image became %s (%v); want the hand edit kept", m1, img, err)
	}

	// The CLI shows it: drift lists it, diff exits 1 and shows the image.
	hostArgs := []string{"-n", ns, "--host-kubeconfig", fed.Host.Kubeconfig}
	if r := runFedwarden(t, append([]string{"drift", "-o", "wide"}, hostArgs...)...); r.code != 0 || !strings.Contains(r.stdout, "ModifiedOutOfBand") || !strings.Contains(r.stdout, "kubectl-edit") {
		t.Errorf("fedwarden drift:\n%s", r)
	}
	if r := runFedwarden(t, append([]string{"diff", "fdeploy/api"}, hostArgs...)...); r.code != 1 || !strings.Contains(r.stdout, "+      - image: nginx:hotfix") {
		t.Errorf("fedwarden diff with a drifted cluster: want exit 1 and the image line\n%s", r)
	}
	if r := runFedwarden(t, append([]string{"diff", "fdeploy/nothing-here"}, hostArgs...)...); r.code != 2 {
		t.Errorf("fedwarden diff of a resource that does not exist: want exit 2\n%s", r)
	}

	// fedwarden resync sets a new kubefed.io/resync: the copy is written back.
	if r := runFedwarden(t, append([]string{"resync", "fdeploy/api"}, hostArgs...)...); r.code != 0 {
		t.Fatalf("fedwarden resync:\n%s", r)
	}
	poll.Eventually(t, 30*time.Second, "the resync to write the image back", func(ctx context.Context) (bool, string) {
		img, err := memberImage(ctx, member1, ns, "api")
		return err == nil && img == "nginx:1.27", fmt.Sprint(img, err)
	})
	back := waitForEntry(t, host, ns, "deployment-api", m1, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
	// The ledger credits the resync, with its value, so that a policy's
	// resync is told from a person's.
	if n := len(back.DriftHistory); n != 1 || back.DriftHistory[0].ResolvedBy != typesv1beta1.ResolvedByResync || back.DriftHistory[0].Resync == "" ||
		!back.DriftHistory[0].Start.Equal(entry.DriftedSince) || !slices.Equal(back.DriftHistory[0].ChangedBy, []string{"kubectl-edit"}) {
		t.Errorf("%s's drift ledger = %+v; want one episode since %v, by kubectl-edit, resolved by Resync with its value", m1, back.DriftHistory, entry.DriftedSince)
	}
	if r := runFedwarden(t, append([]string{"drift", "--history", "-o", "wide"}, hostArgs...)...); r.code != 0 || !strings.Contains(r.stdout, "Resync") || !strings.Contains(r.stdout, back.DriftHistory[0].Resync) || !strings.Contains(r.stdout, "kubectl-edit") {
		t.Errorf("fedwarden drift --history -o wide: want the episode resolved by the resync, with its value and kubectl-edit\n%s", r)
	}
	poll.Eventually(t, 30*time.Second, "the CPV to record the resync", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "deployment-api")
		fd, _, ferr := federatedStatus(ctx, host, ns, "api")
		if err != nil || ferr != nil {
			return false, fmt.Sprint(err, ferr)
		}
		want := fd.GetAnnotations()[typesv1beta1.AnnotationResync]
		return want != "" && cpv.Status.Resync == want, fmt.Sprintf("CPV %q, annotation %q", cpv.Status.Resync, want)
	})
	if r := runFedwarden(t, append([]string{"diff", "fdeploy/api"}, hostArgs...)...); r.code != 0 {
		t.Errorf("fedwarden diff once in sync: want exit 0\n%s", r)
	}
}

// A copy deleted in a member is recreated under Enforce; under Alert it is
// reported Missing and left deleted.
func TestDriftDeletedCopy(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "enforced", 0, placedOn(m1)))
	createObject(t, host, newFederatedDeployment(t, ns, "alerted", 0, placedOn(m1)+"\n  driftPolicy: {clusters: [{name: "+m1+", remediation: Alert}, {name: "+m2+"}]}"))
	member1 := memberClient(t, 0)
	for _, name := range []string{"enforced", "alerted"} {
		waitForCPV(t, host, ns, "deployment-"+name, "1", "1", m1)
		old := waitForSettled(t, member1, m1, ns, name)
		if err := member1.Delete(t.Context(), old); err != nil {
			t.Fatal(err)
		}
	}
	poll.Eventually(t, 30*time.Second, "the deleted copy to be recreated", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		err := member1.Get(ctx, types.NamespacedName{Namespace: ns, Name: "enforced"}, d)
		return err == nil && d.DeletionTimestamp == nil, fmt.Sprint(err)
	})
	waitForEvent(t, host, ns, "enforced", typesv1beta1.EventDriftDetected, m1, "Missing", "re-applied")
	waitForEntry(t, host, ns, "deployment-alerted", m1, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.Missing && cv.Remediation == typesv1beta1.RemediationAlert
	})
	waitForEvent(t, host, ns, "alerted", typesv1beta1.EventDriftDetected, m1, "deleted in the member")
	time.Sleep(2 * resyncPeriod)
	if err := member1.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "alerted"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("under Alert the deleted copy came back (%v)", err)
	}
}

// ignorePaths are never drift: an edit there stays, the CPV stays InSync,
// and nothing is written.
func TestDriftIgnorePaths(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1 := fed.Members[0].Name
	createObject(t, host, newFederatedDeployment(t, ns, "tolerant", 0, placedOn(m1)+"\n  driftPolicy: {ignorePaths: [/spec/template/spec/containers/0/image]}"))
	waitForCPV(t, host, ns, "deployment-tolerant", "1", "1", m1)
	member1 := memberClient(t, 0)
	waitForSettled(t, member1, m1, ns, "tolerant")
	editImage(t, member1, ns, "tolerant", "nginx:mine")
	edited := &appsv1.Deployment{}
	if err := member1.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "tolerant"}, edited); err != nil {
		t.Fatal(err)
	}
	// The CPV entry records the member generation a sync saw: the edit's,
	// once the controller has looked at it (a write-back would make a
	// later one).
	entry := waitForEntry(t, host, ns, "deployment-tolerant", m1, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.ObservedGeneration >= edited.Generation
	})
	time.Sleep(2 * resyncPeriod) // a periodic resync looks at it too
	if img, err := memberImage(t.Context(), member1, ns, "tolerant"); err != nil || img != "nginx:mine" {
		t.Errorf("an ignored path was written back: image %s (%v)", img, err)
	}
	if entry.ObservedGeneration != edited.Generation || entry.State != typesv1beta1.InSync {
		t.Errorf("the entry after the edit (generation %d): %s at generation %d; want InSync at the edit's", edited.Generation, entry.State, entry.ObservedGeneration)
	}
	waitForCPVState(t, host, ns, "deployment-tolerant", map[string]typesv1beta1.DriftState{m1: typesv1beta1.InSync})
	for _, e := range eventsOf(t, host, ns, "tolerant") {
		if strings.HasPrefix(e, typesv1beta1.EventDriftDetected) {
			t.Errorf("an ignored path was reported: %s", e)
		}
	}
}

// A Deployment the member's API server defaulted, and whose status and
// revision annotation the member's controllers keep writing, stays InSync
// through a minute of periodic resyncs, and Fedwarden writes nothing: not
// the member copies, not the CPV.
func TestDefaultedDeploymentStaysInSync(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "quiet", 2, placedOn(m1, m2)))
	cpv := waitForCPV(t, host, ns, "deployment-quiet", "1", "1", m1, m2)
	before := map[string]*appsv1.Deployment{}
	for i, m := range fed.Members {
		// Two replicas never become available without kubelets, but the
		// member's controllers keep working on them.
		poll.Eventually(t, 30*time.Second, m.Name+"'s deployment controller to see the Deployment", func(ctx context.Context) (bool, string) {
			d := &appsv1.Deployment{}
			if err := memberClient(t, i).Get(ctx, types.NamespacedName{Namespace: ns, Name: "quiet"}, d); err != nil {
				return false, err.Error()
			}
			before[m.Name] = d
			return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 2, fmt.Sprintf("%+v", d.Status)
		})
	}
	cpv = waitForStableCPV(t, host, ns, "deployment-quiet", cpv)
	time.Sleep(60 * time.Second)
	after, err := cpvOf(t.Context(), host, ns, "deployment-quiet")
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != cpv.ResourceVersion {
		t.Errorf("the CPV was written during a minute with nothing changed: %+v", after.Status)
	}
	for i, m := range fed.Members {
		d := &appsv1.Deployment{}
		if err := memberClient(t, i).Get(t.Context(), client.ObjectKeyFromObject(before[m.Name]), d); err != nil {
			t.Fatal(err)
		}
		if d.Generation != before[m.Name].Generation || fedwardenWriteTime(d) != fedwardenWriteTime(before[m.Name]) {
			t.Errorf("%s: Fedwarden wrote the Deployment during a minute with nothing changed (generation %d → %d, last write %s → %s)",
				m.Name, before[m.Name].Generation, d.Generation, fedwardenWriteTime(before[m.Name]), fedwardenWriteTime(d))
		}
	}
}

// waitForStableCPV waits until the CPV has not changed for two resync
// periods (the status writes of the first syncs are over), and returns it.
func waitForStableCPV(t *testing.T, c client.Client, namespace, name string, cpv *typesv1beta1.ClusterPropagatedVersion) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	last, since := cpv.ResourceVersion, time.Now()
	poll.Eventually(t, 60*time.Second, "the CPV to settle", func(ctx context.Context) (bool, string) {
		now, err := cpvOf(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		if now.ResourceVersion != last {
			last, since, cpv = now.ResourceVersion, time.Now(), now
		}
		return time.Since(since) > 2*resyncPeriod, fmt.Sprintf("%+v", now.Status)
	})
	return cpv
}

// fedwardenWriteTime is when Fedwarden last wrote the object, from its
// managed fields.
func fedwardenWriteTime(obj metav1.Object) string {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == "fedwarden" && e.Subresource == "" && e.Time != nil {
			return e.Time.UTC().Format(time.RFC3339)
		}
	}
	return ""
}
