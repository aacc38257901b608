package propagation_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/test/poll"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/cli/unjoin"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// The tests of this file run the propagation controller of
// FederatedDeployments in this process, with the cluster health controller,
// in an inprocess test bed: a host and four members of real
// kube-apiservers. They share that test bed: member-1 and member-2 stay up;
// member-3 is stopped and started again by
// TestAnUnreachableMemberIsReportedAndLosesNothing, and member-4 stopped and
// unjoined by
// TestDeletionWaitsForAnUnreachableMemberAndUnjoiningAbandonsItsCopy. Every
// other test places its resources on member-1 and member-2 only.
const (
	member1         = "member-1"
	member2         = "member-2"
	outageMember    = "member-3"
	abandonedMember = "member-4"

	imagePath = "/spec/template/spec/containers/0/image"
)

// retryPeriod is the propagation controller's: how soon a resource that
// could not reach every cluster is synced again.
const retryPeriod = 5 * time.Second

// Bounds of the waits: a sync takes well under a second on an idle
// machine; the bounds leave room for a starved one.
const (
	propagated = 30 * time.Second
	// notReadyWithin bounds how long a stopped member takes to be marked
	// not Ready: the failure threshold's probes, a period apart (see
	// inprocess.Bed.StartManager), and slack.
	notReadyWithin = 60 * time.Second
)

// TestANewResourceReachesItsMembersAndItsCPVRecordsInSync creates a
// FederatedDeployment with an override, then changes its template and its
// override, and checks each time the copies in the members and what the
// ClusterPropagatedVersion and the resource's status say.
func TestANewResourceReachesItsMembersAndItsCPVRecordsInSync(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "new")
	fd := federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1, member2}, map[string]int64{member2: 3})
	tb.create(t, fd)

	cpv := tb.waitForCPV(t, ns, "web", "1", "1", member1, member2)
	copies := map[string]*appsv1.Deployment{}
	for _, m := range []string{member1, member2} {
		d := tb.deployment(t, m, ns, "web")
		copies[m] = d
		if d.Labels[typesv1beta1.LabelManaged] != "true" {
			t.Errorf("%s: the copy's labels %v lack %s=true", m, d.Labels, typesv1beta1.LabelManaged)
		}
		checkVersions(t, m, d, "1", "1")
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
			t.Errorf("%s: image %s, want nginx:1.27", m, img)
		}
		cv := entry(cpv, m)
		if cv.Version != d.ResourceVersion || cv.Remediation != typesv1beta1.RemediationEnforce {
			t.Errorf("%s: CPV entry %+v, want the copy's resourceVersion %s, remediation Enforce", m, cv, d.ResourceVersion)
		}
	}
	if r := *copies[member1].Spec.Replicas; r != 1 {
		t.Errorf("%s: replicas %d, want the template's 1", member1, r)
	}
	if r := *copies[member2].Spec.Replicas; r != 3 {
		t.Errorf("%s: replicas %d, want the override's 3", member2, r)
	}
	if got := clusterNames(cpv.Spec.Clusters); !slices.Equal(got, []string{member1, member2}) {
		t.Errorf("CPV spec.clusters = %v, want %s and %s", got, member1, member2)
	}
	if !meta.IsStatusConditionTrue(cpv.Status.Conditions, typesv1beta1.CPVPropagated) || !meta.IsStatusConditionFalse(cpv.Status.Conditions, typesv1beta1.CPVDrifted) ||
		ptrValue(cpv.Status.ClusterCount) != 2 || ptrValue(cpv.Status.DriftedClusters) != 0 {
		t.Errorf("CPV status %+v: want Propagated True, Drifted False, 2 clusters, 0 drifted", cpv.Status)
	}
	tb.waitForFederatedStatus(t, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]outcome{
		member1: {reason: typesv1beta1.ClusterPropagated}, member2: {reason: typesv1beta1.ClusterPropagated},
	})

	// A template change is a new template version, in both members.
	tb.patch(t, ns, "web", `{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.29"}]}}}}}}`)
	tb.waitForCPV(t, ns, "web", "2", "1", member1, member2)
	for _, m := range []string{member1, member2} {
		d := tb.deployment(t, m, ns, "web")
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.29" {
			t.Errorf("%s: image %s after the template change, want nginx:1.29", m, img)
		}
		checkVersions(t, m, d, "2", "1")
	}
	before := tb.deployment(t, member1, ns, "web")

	// An override change is a new override version, written only where it
	// applies.
	tb.patch(t, ns, "web", fmt.Sprintf(`{"spec":{"overrides":[{"clusterName":%q,"clusterOverrides":[{"path":"/spec/replicas","value":5}]}]}}`, member2))
	tb.waitForCPV(t, ns, "web", "2", "2", member1, member2)
	d2 := tb.deployment(t, member2, ns, "web")
	if r := *d2.Spec.Replicas; r != 5 {
		t.Errorf("%s: replicas %d after the override change, want 5", member2, r)
	}
	checkVersions(t, member2, d2, "2", "2")
	// member-1's content did not change: its copy is not written, and the
	// CPV records it InSync at the current versions all the same.
	if after := tb.deployment(t, member1, ns, "web"); after.ResourceVersion != before.ResourceVersion {
		t.Errorf("%s's copy was rewritten by an override of %s: resourceVersion %s → %s", member1, member2, before.ResourceVersion, after.ResourceVersion)
	}
}

// checkVersions checks the version annotations of a copy.
func checkVersions(t *testing.T, member string, d *appsv1.Deployment, template, override string) {
	t.Helper()
	if tv, ov := d.Annotations[typesv1beta1.AnnotationTemplateVersion], d.Annotations[typesv1beta1.AnnotationOverrideVersion]; tv != template || ov != override {
		t.Errorf("%s: the copy carries template and override versions %q and %q, want %q and %q", member, tv, ov, template, override)
	}
}

// TestAHandEditInAMemberIsHealedUnderEnforce edits the copy of one
// resource in one member, and deletes the copy of another, as someone with
// kubectl would: under the default remediation, Enforce, both are written
// back, Events say what drifted and that it was healed, the CPVs record the
// healed copies InSync at the versions they had, and the other member's
// copies are not written.
func TestAHandEditInAMemberIsHealedUnderEnforce(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "drift")
	for _, name := range []string{"edited", "deleted"} {
		tb.create(t, federatedDeployment(t, ns, name, "nginx:1.27", []string{member1, member2}, nil))
		tb.waitForCPV(t, ns, name, "1", "1", member1, member2)
	}
	untouched := map[string]*appsv1.Deployment{"edited": tb.deployment(t, member2, ns, "edited"), "deleted": tb.deployment(t, member1, ns, "deleted")}

	tb.editImage(t, member1, ns, "edited", "nginx:hand-edited")
	tb.waitForImage(t, member1, ns, "edited", "nginx:1.27", "the hand edit to be written back")
	tb.waitForEvent(t, ns, "edited", typesv1beta1.EventDriftDetected, member1, string(typesv1beta1.ModifiedOutOfBand), imagePath, "kubectl-edit", "re-applied")
	tb.waitForEvent(t, ns, "edited", typesv1beta1.EventDriftResolved, member1)
	cpv := tb.waitForCPV(t, ns, "edited", "1", "1", member1, member2)
	if cv := entry(cpv, member1); cv.Remediation != typesv1beta1.RemediationEnforce || len(cv.ChangedPaths) != 0 || cv.DriftedSince != nil {
		t.Errorf("%s: CPV entry %+v after the heal, want Enforce and no drift left", member1, cv)
	}

	gone := tb.deployment(t, member2, ns, "deleted")
	if err := tb.Members[member2].Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, propagated, "the deleted copy to be created again", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := tb.Members[member2].Get(ctx, client.ObjectKeyFromObject(gone), d); err != nil {
			return false, err.Error()
		}
		return d.UID != gone.UID, "the old copy is still there"
	})
	tb.waitForEvent(t, ns, "deleted", typesv1beta1.EventDriftDetected, member2, string(typesv1beta1.Missing), "re-applied")
	tb.waitForEvent(t, ns, "deleted", typesv1beta1.EventDriftResolved, member2)
	tb.waitForCPV(t, ns, "deleted", "1", "1", member1, member2)

	for name, before := range untouched {
		m := member2
		if name == "deleted" {
			m = member1
		}
		if after := tb.deployment(t, m, ns, name); after.ResourceVersion != before.ResourceVersion {
			t.Errorf("%s: the copy of %s was written while the other member's drifted: resourceVersion %s → %s", m, name, before.ResourceVersion, after.ResourceVersion)
		}
	}
}

// TestTheOrphanAnnotationKeepsTheCopiesOfADeletedResource deletes two
// resources, one annotated kubefed.io/orphan: "true": its copies stay in
// the members as they were, while the other's are deleted.
func TestTheOrphanAnnotationKeepsTheCopiesOfADeletedResource(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "orphan")
	kept := federatedDeployment(t, ns, "kept", "nginx:1.27", []string{member1, member2}, nil)
	kept.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	removed := federatedDeployment(t, ns, "removed", "nginx:1.27", []string{member1, member2}, nil)
	tb.create(t, kept)
	tb.create(t, removed)
	tb.waitForCPV(t, ns, "kept", "1", "1", member1, member2)
	tb.waitForCPV(t, ns, "removed", "1", "1", member1, member2)
	copies := map[string]*appsv1.Deployment{}
	for _, m := range []string{member1, member2} {
		copies[m] = tb.deployment(t, m, ns, "kept")
	}

	for _, fd := range []*unstructured.Unstructured{kept, removed} {
		if err := tb.Host.Delete(t.Context(), fd); err != nil {
			t.Fatal(err)
		}
		tb.waitForAbsent(t, tb.Host, fd, "the host")
	}
	for _, m := range []string{member1, member2} {
		tb.waitForAbsent(t, tb.Members[m], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "removed"}}, m)
		got := tb.deployment(t, m, ns, "kept")
		if got.UID != copies[m].UID || got.ResourceVersion != copies[m].ResourceVersion || got.DeletionTimestamp != nil {
			t.Errorf("%s: the orphaned copy was touched: UID %s → %s, resourceVersion %s → %s, deletionTimestamp %v",
				m, copies[m].UID, got.UID, copies[m].ResourceVersion, got.ResourceVersion, got.DeletionTimestamp)
		}
	}
}

// TestAnUnreachableMemberIsReportedAndLosesNothing stops a member's API
// server: the FederatedCluster turns not Ready, a template change reaches
// the other member while the CPV and the resource's status report the
// stopped one Unreachable with the version it has, a new resource goes to
// the other member, and no copy is deleted. Back, the member gets what it
// missed, in the copy it had.
func TestAnUnreachableMemberIsReportedAndLosesNothing(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "outage")
	tb.create(t, federatedDeployment(t, ns, "web", "nginx:1.27", []string{member1, outageMember}, nil))
	tb.waitForCPV(t, ns, "web", "1", "1", member1, outageMember)
	before := map[string]*appsv1.Deployment{}
	for _, m := range []string{member1, outageMember} {
		before[m] = tb.deployment(t, m, ns, "web")
	}

	down := tb.Fed.Member(outageMember)
	tb.stopMember(t, down)
	tb.patch(t, ns, "web", `{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.29"}]}}}}}}`)
	poll.Eventually(t, propagated, "the CPV to report "+outageMember+" Unreachable at template version 1", func(ctx context.Context) (bool, string) {
		cpv, err := tb.cpv(ctx, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		on, off := entry(cpv, member1), entry(cpv, outageMember)
		return cpv.Status.TemplateVersion == "2" && on.State == typesv1beta1.InSync && on.TemplateVersion == "2" &&
			off.State == typesv1beta1.Unreachable && off.TemplateVersion == "1" && strings.Contains(off.Message, "not Ready") &&
			slices.Equal(clusterNames(cpv.Spec.Clusters), []string{member1, outageMember}), fmt.Sprintf("%+v %+v", cpv.Spec, cpv.Status)
	})
	tb.waitForFederatedStatus(t, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]outcome{
		member1:      {reason: typesv1beta1.ClusterPropagated},
		outageMember: {reason: typesv1beta1.ClusterUnreachable, message: "is not Ready"},
	})
	if d := tb.deployment(t, member1, ns, "web"); d.UID != before[member1].UID || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.29" {
		t.Errorf("%s: copy %s with image %s, want the same copy (%s) with nginx:1.29", member1, d.UID, d.Spec.Template.Spec.Containers[0].Image, before[member1].UID)
	}

	// A resource created meanwhile goes where it can.
	tb.create(t, federatedDeployment(t, ns, "newcomer", "nginx:1.27", []string{member1, outageMember}, nil))
	tb.waitForCPV(t, ns, "newcomer", "1", "1", member1)
	scheduled := tb.waitForCondition(t, ns, "newcomer", typesv1beta1.FederatedScheduled, outageMember, "not Ready")
	t.Logf("newcomer, created while %s is down: Scheduled %s (%s): %s", outageMember, scheduled.Status, scheduled.Reason, scheduled.Message)

	tb.restartMember(t, down)
	tb.waitForCPV(t, ns, "web", "2", "1", member1, outageMember)
	if d := tb.deployment(t, outageMember, ns, "web"); d.UID != before[outageMember].UID || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.29" {
		t.Errorf("%s, back: copy %s with image %s, want the copy it had (%s) with nginx:1.29", outageMember, d.UID, d.Spec.Template.Spec.Containers[0].Image, before[outageMember].UID)
	}
	tb.waitForEvent(t, ns, "web", typesv1beta1.EventDriftDetected, outageMember, string(typesv1beta1.OutdatedTemplate), "re-applied")
	tb.waitForCPV(t, ns, "newcomer", "1", "1", member1, outageMember)
	if d := tb.deployment(t, member1, ns, "web"); d.UID != before[member1].UID {
		t.Errorf("%s: the copy was replaced during the outage (UID %s → %s)", member1, before[member1].UID, d.UID)
	}
}

// TestDeletionWaitsForAnUnreachableMemberAndUnjoiningAbandonsItsCopy
// deletes resources placed on a member whose API server is stopped. The
// deletion waits: the resource keeps its finalizer and says, in its
// Propagated condition, which cluster it waits for and that unjoining it is
// the way out; the copy in the reachable member is deleted at once. Back,
// the member loses its copy and the resource goes. Unjoined while down
// instead, the member is abandoned: the resource goes, and the copy stays
// there as it was.
func TestDeletionWaitsForAnUnreachableMemberAndUnjoiningAbandonsItsCopy(t *testing.T) {
	tb := testBed(t)
	t.Parallel()
	ns := tb.Namespace(t, "abandon")
	waited := federatedDeployment(t, ns, "waited", "nginx:1.27", []string{member1, abandonedMember}, nil)
	abandoned := federatedDeployment(t, ns, "abandoned", "nginx:1.27", []string{member1, abandonedMember}, nil)
	tb.create(t, waited)
	tb.create(t, abandoned)
	tb.waitForCPV(t, ns, "waited", "1", "1", member1, abandonedMember)
	tb.waitForCPV(t, ns, "abandoned", "1", "1", member1, abandonedMember)
	left := tb.deployment(t, abandonedMember, ns, "abandoned")
	down := tb.Fed.Member(abandonedMember)

	// Deleted while the member is down: the deletion waits for it.
	tb.stopMember(t, down)
	tb.deleteAndWaitPending(t, waited)
	tb.restartMember(t, down)
	tb.waitForAbsent(t, tb.Host, waited, "the host")
	tb.waitForAbsent(t, tb.Members[abandonedMember], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "waited"}}, abandonedMember)

	// Deleted while it is down, then unjoined: the copy is abandoned.
	tb.stopMember(t, down)
	tb.deleteAndWaitPending(t, abandoned)
	stdout, stderr, code := clitest.Execute(unjoin.NewCommand, abandonedMember,
		"--host-kubeconfig", tb.Fed.Host.Kubeconfig, "--cluster-kubeconfig", down.Kubeconfig, "--timeout", "5s")
	if code != 3 || !strings.Contains(stderr, "left on the member") {
		t.Fatalf("unjoin of a member that is down: exit code %d, want 3 (host side removed, member side left); stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	tb.waitForAbsent(t, tb.Host, abandoned, "the host")
	tb.restartMember(t, down)
	got := tb.deployment(t, abandonedMember, ns, "abandoned")
	if got.UID != left.UID || got.ResourceVersion != left.ResourceVersion || got.DeletionTimestamp != nil {
		t.Errorf("%s: the abandoned copy changed: UID %s → %s, resourceVersion %s → %s, deletionTimestamp %v",
			abandonedMember, left.UID, got.UID, left.ResourceVersion, got.ResourceVersion, got.DeletionTimestamp)
	}
}

// deleteAndWaitPending deletes fd, placed on member-1 and on the stopped
// abandonedMember, and checks what a user sees while its deletion waits.
func (tb bed) deleteAndWaitPending(t *testing.T, fd *unstructured.Unstructured) {
	t.Helper()
	if err := tb.Host.Delete(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	cond := tb.waitForCondition(t, fd.GetNamespace(), fd.GetName(), typesv1beta1.FederatedPropagated, abandonedMember, "unjoin them")
	t.Logf("%s, deleted while %s is down: Propagated %s (%s): %s", fd.GetName(), abandonedMember, cond.Status, cond.Reason, cond.Message)
	if cond.Status != metav1.ConditionFalse || cond.Reason != typesv1beta1.ReasonDeletionPending {
		t.Errorf("%s: Propagated = %s (%s), want False (%s)", fd.GetName(), cond.Status, cond.Reason, typesv1beta1.ReasonDeletionPending)
	}
	tb.waitForAbsent(t, tb.Members[member1], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: fd.GetNamespace(), Name: fd.GetName()}}, member1)
	live := fd.DeepCopy()
	if err := tb.Host.Get(t.Context(), client.ObjectKeyFromObject(fd), live); err != nil {
		t.Fatalf("%s is gone while its copy in %s could not be deleted: %v", fd.GetName(), abandonedMember, err)
	}
	if !slices.Contains(live.GetFinalizers(), typesv1beta1.FinalizerSync) || live.GetDeletionTimestamp() == nil {
		t.Errorf("%s: finalizers %v, deletionTimestamp %v; want %s kept while the deletion waits", fd.GetName(), live.GetFinalizers(), live.GetDeletionTimestamp(), typesv1beta1.FinalizerSync)
	}
}

// bed is the test bed the tests of this file share.
type bed struct{ *inprocess.Bed }

var shared = inprocess.Shared{
	Name:       "propagation",
	Federation: []localfed.Option{localfed.WithMemberNames(member1, member2, outageMember, abandonedMember)},
	Setup:      setUp,
}

// testBed returns the shared test bed, started by the first test that asks
// for it.
func testBed(t *testing.T) bed { return bed{shared.Bed(t)} }

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// controller is the propagation controller setUp starts, for tests that
// look into its member informers.
var controller *propagation.Controller

// setUp enables deployments.apps, starts its propagation controller and
// joins the members.
func setUp(ctx context.Context, b *inprocess.Bed) error {
	if _, stderr, code := clitest.Execute(enable.NewCommand, "deployments.apps", "--host-kubeconfig", b.Fed.Host.Kubeconfig); code != 0 {
		return fmt.Errorf("enabling deployments.apps: exit code %d:\n%s", code, stderr)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	if err := b.Host.Get(ctx, client.ObjectKey{Name: "deployments.apps"}, ftc); err != nil {
		return err
	}
	typ := propagation.TypeFromConfig(ftc)
	if err := b.StartManager(func(mgr ctrl.Manager, members *clustercache.Cache) error {
		opts := propagation.DefaultOptions()
		opts.Namespace = inprocess.ControlPlaneNamespace
		opts.RetryPeriod = retryPeriod
		// No FederatedNamespace type is enabled: nothing restricts by namespace.
		c, err := propagation.New(mgr, typ, members, nil, nil, opts)
		if err != nil {
			return err
		}
		controller = c
		return mgr.Add(c)
	}); err != nil {
		return err
	}
	return b.Join()
}

// stopMember stops a member's API server, and waits until its
// FederatedCluster is not Ready; the test starts it again when it ends, if
// it did not. It kills the API server, as in a crash: a graceful Stop
// waits a minute for the watches of the controllers under test to end.
func (tb bed) stopMember(t *testing.T, m *localfed.Cluster) {
	t.Helper()
	start := time.Now()
	if err := m.Kill(); err != nil {
		t.Fatalf("stopping %s: %v", m.Name, err)
	}
	defer func() { t.Logf("%s stopped and not Ready after %s", m.Name, time.Since(start).Round(time.Millisecond)) }()
	t.Cleanup(func() {
		if !m.Running() {
			if err := m.Restart(context.Background()); err != nil {
				t.Errorf("starting %s again: %v", m.Name, err)
			}
		}
	})
	tb.waitForReady(t, m.Name, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, notReadyWithin)
}

// restartMember starts a stopped member's API server again, and waits
// until its FederatedCluster is Ready, when it is still joined.
func (tb bed) restartMember(t *testing.T, m *localfed.Cluster) {
	t.Helper()
	start := time.Now()
	if err := m.Restart(t.Context()); err != nil {
		t.Fatalf("starting %s again: %v", m.Name, err)
	}
	defer func() {
		t.Logf("%s started again and Ready after %s", m.Name, time.Since(start).Round(time.Millisecond))
	}()
	err := tb.Host.Get(t.Context(), client.ObjectKey{Name: m.Name}, &corev1beta1.FederatedCluster{})
	if apierrors.IsNotFound(err) {
		return
	}
	tb.waitForReady(t, m.Name, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, notReadyWithin)
}

func (tb bed) waitForReady(t *testing.T, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
	t.Helper()
	poll.Eventually(t, timeout, fmt.Sprintf("FederatedCluster %s: Ready %s (%s)", name, status, reason), func(ctx context.Context) (bool, string) {
		fc := &corev1beta1.FederatedCluster{}
		if err := tb.Host.Get(ctx, client.ObjectKey{Name: name}, fc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
		return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("%+v", c)
	})
}

// federatedDeployment returns a FederatedDeployment placed on clusters,
// with a replicas override per cluster of overrides.
func federatedDeployment(t *testing.T, namespace, name, image string, clusters []string, overrides map[string]int64) *unstructured.Unstructured {
	t.Helper()
	placement := make([]any, 0, len(clusters))
	for _, c := range clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	var ovs []any
	for _, c := range slices.Sorted(maps.Keys(overrides)) {
		ovs = append(ovs, map[string]any{"clusterName": c, "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": overrides[c]}}})
	}
	raw := fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      replicas: 1
      selector: {matchLabels: {app: %[1]s}}
      template:
        metadata: {labels: {app: %[1]s}}
        spec: {containers: [{name: web, image: %[3]q}]}
`, name, namespace, image)
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(raw), &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(u.Object, placement, "spec", "placement", "clusters"); err != nil {
		t.Fatal(err)
	}
	if ovs != nil {
		if err := unstructured.SetNestedSlice(u.Object, ovs, "spec", "overrides"); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

func (tb bed) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := tb.Host.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %s: %v", client.ObjectKeyFromObject(obj), err)
	}
}

// patch changes a FederatedDeployment as `kubectl patch --type merge`
// would.
func (tb bed) patch(t *testing.T, namespace, name, patch string) {
	t.Helper()
	fd := &unstructured.Unstructured{}
	fd.SetAPIVersion("types.kubefed.io/v1beta1")
	fd.SetKind("FederatedDeployment")
	fd.SetNamespace(namespace)
	fd.SetName(name)
	if err := tb.Host.Patch(t.Context(), fd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching %s/%s: %v", namespace, name, err)
	}
}

// editImage changes the image of a member's copy as `kubectl edit` would:
// an update by another field manager.
func (tb bed) editImage(t *testing.T, member, namespace, name, image string) {
	t.Helper()
	poll.Eventually(t, propagated, "editing the copy in "+member, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := tb.Members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		d.Spec.Template.Spec.Containers[0].Image = image
		if err := tb.Members[member].Update(ctx, d, client.FieldOwner("kubectl-edit")); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// waitForImage waits, as what, until the copy of name in member has image.
func (tb bed) waitForImage(t *testing.T, member, namespace, name, image, what string) {
	t.Helper()
	poll.Eventually(t, propagated, what, func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := tb.Members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		img := d.Spec.Template.Spec.Containers[0].Image
		return img == image, "image " + img
	})
}

// deployment returns the copy in member, failing the test when there is
// none.
func (tb bed) deployment(t *testing.T, member, namespace, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := tb.Members[member].Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("%s: reading Deployment %s/%s: %v", member, namespace, name, err)
	}
	return d
}

func (tb bed) cpv(ctx context.Context, namespace, name string) (*typesv1beta1.ClusterPropagatedVersion, error) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	err := tb.Host.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "deployment-" + name}, cpv)
	return cpv, err
}

// waitForCPV waits until the CPV of FederatedDeployment name records
// template and override versions, and each of clusters, and only them,
// InSync at those versions, at the resourceVersion of its copy. (A copy
// whose content an override change left as it was is not written again,
// and keeps the version annotations of its last write.)
func (tb bed) waitForCPV(t *testing.T, namespace, name string, template, override typesv1beta1.Version, clusters ...string) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	poll.Eventually(t, propagated, fmt.Sprintf("the CPV of %s/%s: versions %s and %s, InSync in %v", namespace, name, template, override, clusters), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = tb.cpv(ctx, namespace, name); err != nil {
			return false, err.Error()
		}
		st := cpv.Status
		if st.TemplateVersion != template || st.OverrideVersion != override || len(st.ClusterVersions) != len(clusters) {
			return false, fmt.Sprintf("%+v", st)
		}
		for _, c := range clusters {
			cv := entry(cpv, c)
			if cv.State != typesv1beta1.InSync || cv.TemplateVersion != template || cv.OverrideVersion != override {
				return false, fmt.Sprintf("%+v", st)
			}
			d := &appsv1.Deployment{}
			if err := tb.Members[c].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
				return false, fmt.Sprintf("%s: %v", c, err)
			}
			if cv.Version != d.ResourceVersion {
				return false, fmt.Sprintf("%s: entry %+v, copy at resourceVersion %s", c, cv, d.ResourceVersion)
			}
		}
		return true, ""
	})
	return cpv
}

// entry returns cluster's entry of the CPV, or an empty one.
func entry(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) typesv1beta1.ClusterVersion {
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			return cv
		}
	}
	return typesv1beta1.ClusterVersion{}
}

func clusterNames(cs []typesv1beta1.PlacedCluster) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, string(c.Name))
	}
	return out
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return -1
	}
	return *p
}

// federatedStatus reads the status of FederatedDeployment name.
func (tb bed) federatedStatus(ctx context.Context, namespace, name string) (typesv1beta1.FederatedStatus, error) {
	var st typesv1beta1.FederatedStatus
	fd := &unstructured.Unstructured{}
	fd.SetAPIVersion("types.kubefed.io/v1beta1")
	fd.SetKind("FederatedDeployment")
	if err := tb.Host.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, fd); err != nil {
		return st, err
	}
	raw, _, _ := unstructured.NestedMap(fd.Object, "status")
	err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
	return st, err
}

// outcome is what a resource's status.clusters says of one cluster.
type outcome struct{ reason, message string }

// waitForFederatedStatus waits until the resource's Propagated condition
// has status and reason, and status.clusters says of each cluster of want
// its reason and a message holding want's.
func (tb bed) waitForFederatedStatus(t *testing.T, namespace, name string, status metav1.ConditionStatus, reason string, want map[string]outcome) {
	t.Helper()
	poll.Eventually(t, propagated, fmt.Sprintf("the status of %s/%s: Propagated %s (%s), clusters %v", namespace, name, status, reason, want), func(ctx context.Context) (bool, string) {
		st, err := tb.federatedStatus(ctx, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
		if c == nil || c.Status != status || c.Reason != reason || len(st.Clusters) != len(want) {
			return false, fmt.Sprintf("%+v", st)
		}
		for _, pc := range st.Clusters {
			w, ok := want[string(pc.Name)]
			if !ok || pc.Reason != w.reason || !strings.Contains(pc.Message, w.message) {
				return false, fmt.Sprintf("%+v", st)
			}
		}
		return true, ""
	})
}

// waitForCondition waits until condition typ of the resource has a message
// holding every part, and returns it.
func (tb bed) waitForCondition(t *testing.T, namespace, name, typ string, parts ...string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	poll.Eventually(t, propagated, fmt.Sprintf("condition %s of %s/%s to say %q", typ, namespace, name, parts), func(ctx context.Context) (bool, string) {
		st, err := tb.federatedStatus(ctx, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(st.Conditions, typ)
		if c == nil {
			return false, fmt.Sprintf("%+v", st.Conditions)
		}
		got = *c
		return !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(c.Message, p) }), fmt.Sprintf("%+v", *c)
	})
	return got
}

// waitForEvent waits for an Event of the resource whose reason and message
// hold every part.
func (tb bed) waitForEvent(t *testing.T, namespace, name string, parts ...string) {
	t.Helper()
	poll.Eventually(t, propagated, fmt.Sprintf("an Event of %s/%s saying %q", namespace, name, parts), func(ctx context.Context) (bool, string) {
		list := &corev1.EventList{}
		if err := tb.Host.List(ctx, list, client.InNamespace(namespace)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			text := e.Reason + ": " + e.Message
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(text, p) }) {
				return true, ""
			}
			if e.Series != nil {
				text += fmt.Sprintf(" (a series of %d)", e.Series.Count)
			}
			seen = append(seen, text)
		}
		return false, strings.Join(seen, "; ")
	})
}

// waitForAbsent waits until obj is gone from c.
func (tb bed) waitForAbsent(t *testing.T, c client.Client, obj client.Object, where string) {
	t.Helper()
	poll.Eventually(t, propagated, fmt.Sprintf("%T %s to be gone from %s", obj, client.ObjectKeyFromObject(obj), where), func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("still there (%v)", err)
	})
}
