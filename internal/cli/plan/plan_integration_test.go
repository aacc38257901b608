package plan_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/planreport"

	"github.com/fedwarden/fedwarden/test/poll"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/cli/plan"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// The tests of this file plan changes to resources that the real
// propagation controller, running in this process, placed in two real
// members, as `fedwarden controller-manager` would. Each test has its own
// namespace; they share the test bed.
const (
	member1 = "member-1"
	member2 = "member-2"

	// settled bounds the wait for the controller to place a resource.
	settled = 60 * time.Second
)

var shared = inprocess.Shared{
	Name:       "plan",
	Federation: []localfed.Option{localfed.WithMemberNames(member1, member2)},
	Setup:      setUp,
}

func TestMain(m *testing.M) { os.Exit(shared.Run(m)) }

// setUp enables Deployments and Secrets, runs their propagation
// controllers and joins the members.
func setUp(ctx context.Context, b *inprocess.Bed) error {
	var types []propagation.Type
	for _, name := range []string{"deployments.apps", "secrets"} {
		if _, stderr, code := clitest.Execute(enable.NewCommand, name, "--host-kubeconfig", b.Fed.Host.Kubeconfig); code != 0 {
			return fmt.Errorf("enabling %s: exit code %d:\n%s", name, code, stderr)
		}
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := b.Host.Get(ctx, client.ObjectKey{Name: name}, ftc); err != nil {
			return err
		}
		types = append(types, propagation.TypeFromConfig(ftc))
	}
	if err := b.StartManager(func(mgr ctrl.Manager, members *clustercache.Cache) error {
		for _, typ := range types {
			opts := propagation.DefaultOptions()
			opts.Namespace = inprocess.ControlPlaneNamespace
			c, err := propagation.New(mgr, typ, members, nil, nil, opts)
			if err != nil {
				return err
			}
			if err := mgr.Add(c); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return b.Join()
}

// web is a FederatedDeployment on both members, rolled out in two waves,
// one member each; extra is added to its spec.
func web(ns, image, extra string) string {
	return fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: %s}
spec:
  placement: {clusters: [{name: %s}, {name: %s}]}
  rollout:
    strategy: Waves
    waves: [{name: canary, clusters: [%s]}, {name: main, clusters: [%s]}]
  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "%s"}]}
%s`, ns, member1, member2, member1, member2, image, extra)
}

// TestPlanAChangeOfImage plans a new image for a resource placed on both
// members: both would be updated, each in its wave, both members take the
// dry run, and the diff shows the image; nothing is written. The resource
// as the host has it, and the manifest it was created from, plan nothing.
func TestPlanAChangeOfImage(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "image")
	place(t, b, ns, web(ns, "nginx:1.25", ""), "deployment-web")
	before := snapshot(t, b, ns)

	stdout, stderr, code := run(t, b, "-f", manifest(t, web(ns, "nginx:1.26", "")))
	imageLine := "-      - image: nginx:1.25\n+      - image: nginx:1.26\n"
	if code != 1 || strings.Count(stdout, imageLine) != 2 ||
		!strings.Contains(stdout, "member-1: Update, wave 1/2 canary\n") || !strings.Contains(stdout, "member-2: Update, wave 2/2 main\n") ||
		strings.Count(stdout, "dry run: allowed by the member\n") != 2 || !strings.Contains(stdout, "held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: ") || !strings.Contains(stdout, "--- live member-1/"+ns+"/web\n+++ planned member-1/"+ns+"/web\n") ||
		!strings.Contains(stdout, "Member capacity was not considered") {
		t.Errorf("plan of a new image: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of a new image:\n%s%s", stdout, stderr)

	stdout, stderr, code = run(t, b, "-f", manifest(t, web(ns, "nginx:1.26", "")), "-o", "json")
	var r planreport.Report
	if err := json.Unmarshal([]byte(stdout), &r); code != 1 || err != nil {
		t.Fatalf("plan -o json: exit code %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if r.Kind != "FederatedDeployment" || r.Namespace != ns || r.Name != "web" || r.Source != "file" || r.New ||
		r.Versions != (planreport.Versions{Template: "2", Override: "1"}) || r.Rollout.Strategy != "Waves" || len(r.Rollout.Waves) != 2 ||
		!slices.Equal(r.Summary.Changes, []string{member1, member2}) || len(r.Summary.Refused) != 0 || len(r.Clusters) != 2 {
		t.Errorf("plan -o json: %+v", r)
	}
	for i, c := range r.Clusters {
		// Under Waves, the canary wave gets the new image at once, the
		// main wave once the canary is done.
		if c.Action != planreport.ActionUpdate || c.WaveNumber != i+1 || c.Now != (i == 0) || c.DryRun == nil || !c.DryRun.Allowed || !strings.Contains(c.Diff, imageLine) ||
			c.Rendered == nil || c.OverwritesDrift != nil {
			t.Errorf("plan -o json: cluster %+v", c)
		}
	}
	t.Logf("plan -f of a new image, -o json:\n%s", stdout)

	for _, args := range [][]string{{"fdeploy/web", "-n", ns}, {"-f", manifest(t, web(ns, "nginx:1.25", ""))}} {
		stdout, stderr, code = run(t, b, args...)
		if code != 0 || strings.Count(stdout, ": Unchanged") != 2 || strings.Contains(stdout, "dry run") {
			t.Errorf("plan %v of the resource as it is: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
	t.Logf("plan of the resource as it is:\n%s%s", stdout, stderr)
	if after := snapshot(t, b, ns); after != before {
		t.Errorf("plan wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// TestPlanANewResource plans a resource the host does not have, in a
// namespace the members do not have yet: each placed cluster gets a
// create, which the member cannot judge before the controller creates the
// namespace.
func TestPlanANewResource(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "new")
	stdout, stderr, code := run(t, b, "-f", manifest(t, web(ns, "nginx:1.25", "")))
	if code != 1 || !strings.Contains(stdout, "(a new resource: the host does not have it)") || strings.Count(stdout, ": Create, wave ") != 2 ||
		strings.Count(stdout, "dry run: skipped: namespace "+ns+" does not exist in cluster ") != 2 || !strings.Contains(stdout, "+      - image: nginx:1.25\n") {
		t.Errorf("plan of a new resource: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of a new resource:\n%s%s", stdout, stderr)
	fed := &unstructured.Unstructured{}
	fed.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
	if err := b.Host.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, fed); err == nil || !apierrors.IsNotFound(err) {
		t.Errorf("the host has the planned resource: %v", err)
	}
	for _, m := range []string{member1, member2} {
		if err := b.Members[m].Get(t.Context(), client.ObjectKey{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s has namespace %s after the plan: %v", m, ns, err)
		}
	}
}

// TestPlanAPlacementChange plans the removal of a cluster from the
// placement: its copy would be deleted, which its member dry-runs; the
// other cluster is unchanged.
func TestPlanAPlacementChange(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "placement")
	place(t, b, ns, web(ns, "nginx:1.25", ""), "deployment-web")
	before := snapshot(t, b, ns)
	narrowed := strings.Replace(web(ns, "nginx:1.25", ""), "[{name: member-1}, {name: member-2}]", "[{name: member-1}]", 1)
	stdout, stderr, code := run(t, b, "-f", manifest(t, narrowed))
	if code != 1 || !strings.Contains(stdout, "member-1: Unchanged, wave 1/2 canary\n") ||
		!strings.Contains(stdout, "member-2: Delete\n  why: no longer placed (ClusterAffinity: ") || !strings.Contains(stdout, "its copy is deleted\n  dry run: allowed by the member\n") {
		t.Errorf("plan of a narrower placement: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of a narrower placement:\n%s%s", stdout, stderr)
	if after := snapshot(t, b, ns); after != before {
		t.Errorf("plan wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// TestPlanAResourceCreatedAgain plans a resource under the name of one
// deleted with its copies orphaned, whose CPV is still there (the bed runs
// no garbage collector): the plan says that the controller waits for the
// garbage collector, and plans as for a resource without a CPV, so that
// the earlier resource's copy in member-2, which the new placement leaves
// out, is not planned for deletion.
func TestPlanAResourceCreatedAgain(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "again")
	orphaned := strings.Replace(web(ns, "nginx:1.25", ""), "metadata: {name: web, namespace: "+ns+"}",
		"metadata: {name: web, namespace: "+ns+", annotations: {kubefed.io/orphan: \"true\"}}", 1)
	place(t, b, ns, orphaned, "deployment-web")
	earlier := object(t, orphaned)
	if err := b.Host.Get(t.Context(), client.ObjectKeyFromObject(earlier), earlier); err != nil {
		t.Fatal(err)
	}
	if err := b.Host.Delete(t.Context(), earlier); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, settled, "the earlier resource to be gone", func(ctx context.Context) (bool, string) {
		err := b.Host.Get(ctx, client.ObjectKeyFromObject(earlier), object(t, orphaned))
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})

	narrowed := strings.Replace(web(ns, "nginx:1.26", ""), "[{name: member-1}, {name: member-2}]", "[{name: member-1}]", 1)
	stdout, stderr, code := run(t, b, "-f", manifest(t, narrowed))
	waiting := "Waiting: ClusterPropagatedVersion " + ns + "/deployment-web belongs to an earlier FederatedDeployment of this name (UID " + string(earlier.GetUID()) + "), deleted"
	if code != 1 || !strings.Contains(stdout, "(a new resource: the host does not have it)") || !strings.Contains(stdout, waiting) ||
		!strings.Contains(stdout, "Versions: template 1, override 1") || strings.Contains(stdout, "member-2: Delete") {
		t.Errorf("plan of a resource created again: exit code %d, want 1, %q, versions 1 and no delete in member-2; stdout:\n%s\nstderr:\n%s", code, waiting, stdout, stderr)
	}
	t.Logf("plan -f of a resource created again:\n%s%s", stdout, stderr)
}

// TestPlanShowsAMemberRefusal plans an image that a ValidatingAdmissionPolicy
// of member-2 refuses: the plan says so for member-2 only, and nothing is
// written anywhere, even when run by an identity of the host that may only
// read.
func TestPlanShowsAMemberRefusal(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "refusal")
	place(t, b, ns, web(ns, "nginx:1.25", ""), "deployment-web")
	const message = "this member runs no image tagged :latest"
	refuseLatest(t, b, ns, message)
	before := snapshot(t, b, ns)

	file := manifest(t, web(ns, "nginx:latest", ""))
	stdout, stderr, code := run(t, b, "-f", file)
	if code != 1 || strings.Count(stdout, "dry run: REFUSED by the member: ") != 1 || !strings.Contains(stdout, message) ||
		!strings.Contains(stdout, "member-1: Update, wave 1/2 canary\n  why: template version 1 → 2; gets revision 2 now: wave 1/2 canary starts\n  dry run: allowed by the member\n") ||
		!strings.Contains(stderr, "REFUSED by the member in 1 cluster: member-2") {
		t.Errorf("plan of a refused image: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of a refused image:\n%s%s", stdout, stderr)

	reader := readOnlyKubeconfig(t, b)
	stdout, stderr, code = clitest.Execute(plan.NewCommand, "-f", file, "-o", "json", "--host-kubeconfig", reader)
	var r planreport.Report
	if err := json.Unmarshal([]byte(stdout), &r); code != 1 || err != nil || len(r.Clusters) != 2 {
		t.Fatalf("plan -o json as a reader: exit code %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	t.Logf("plan -f of a refused image, -o json, as a reader:\n%s", stdout)
	if d := r.Clusters[0].DryRun; d == nil || !d.Allowed {
		t.Errorf("member-1's dry run: %+v, want allowed", d)
	}
	if d := r.Clusters[1].DryRun; d == nil || d.Allowed || d.Status != planreport.DryRunRefused || !strings.Contains(d.Message, message) {
		t.Errorf("member-2's dry run: %+v, want refused with %q", d, message)
	}
	if !slices.Equal(r.Summary.Refused, []string{member2}) {
		t.Errorf("summary %+v, want member-2 refused", r.Summary)
	}
	if after := snapshot(t, b, ns); after != before {
		t.Errorf("plan wrote:\nbefore %s\nafter  %s", before, after)
	}
	for _, m := range []string{member1, member2} {
		if img := deployment(t, b, m, ns).Spec.Template.Spec.Containers[0].Image; img != "nginx:1.25" {
			t.Errorf("%s: image %s, want nginx:1.25 still", m, img)
		}
	}
}

// TestPlanReportsTheDriftItWouldOverwrite: under remediation Alert, a hand
// edit of member-1's replicas stays, and the CPV reports it; a new template
// would overwrite it there, and plan says so. As the resource is, plan
// changes nothing: Alert leaves the edit.
func TestPlanReportsTheDriftItWouldOverwrite(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "drift")
	alert := "  driftPolicy: {remediation: Alert}\n"
	place(t, b, ns, web(ns, "nginx:1.25", alert), "deployment-web")
	handEdit := []byte(`{"spec":{"replicas":5}}`)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := b.Members[member1].Patch(t.Context(), d, client.RawPatch(types.MergePatchType, handEdit), client.FieldOwner("hand-edit")); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, settled, "the CPV to report the hand edit", func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deployment-web"}, cpv); err != nil {
			return false, err.Error()
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == member1 {
				return cv.State == typesv1beta1.ModifiedOutOfBand && slices.Contains(cv.ChangedBy, "hand-edit"), fmt.Sprintf("%+v", cv)
			}
		}
		return false, fmt.Sprintf("%+v", cpv.Status)
	})

	stdout, stderr, code := run(t, b, "-f", manifest(t, web(ns, "nginx:1.26", alert)))
	member1Plan, member2Plan, _ := strings.Cut(stdout, "\nmember-2: ")
	if code != 1 || !strings.Contains(member1Plan, "overwrites drift: ModifiedOutOfBand at /spec/replicas (changed by hand-edit)\n") ||
		!strings.Contains(member1Plan, "-  replicas: 5\n+  replicas: 2\n") || strings.Contains(member2Plan, "overwrites drift") {
		t.Errorf("plan over a hand edit: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f over a hand edit:\n%s%s", stdout, stderr)

	stdout, stderr, code = run(t, b, "deployment/web", "-n", ns)
	if code != 0 || !strings.Contains(stdout, "member-1: Unchanged, wave 1/2 canary\n  why: changed in the member by hand-edit: /spec/replicas; left as it is (remediation Alert)\n") {
		t.Errorf("plan of the resource as it is: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestPlanFollowsTheRolloutInWaves: mid-rollout, plan says when each
// cluster gets the change as the controller's rollout engine decides it.
// web's second wave, main (member-2), waits for an approval; nginx:1.26,
// revision 2, went to the canary wave (member-1), and member-2 is held at
// revision 1. Plan shows member-2 held there, and why; a further change,
// revision 3, goes to member-1 now and holds member-2; an approval in the
// manifest lets member-2 have revision 2 now; a pause holds both. An
// identity that may not list the revisions gets plan's approximation, and
// is told so. Plan writes nothing.
func TestPlanFollowsTheRolloutInWaves(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "waves")
	doc := func(image string) string {
		return strings.Replace(web(ns, image, ""), "{name: main, clusters: [member-2]}", "{name: main, clusters: [member-2], pause: true}", 1)
	}
	place(t, b, ns, doc("nginx:1.25"), "deployment-web")
	fed := object(t, doc("nginx:1.25"))
	image := []byte(`{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:1.26"}]}}}}}}`)
	if err := b.Host.Patch(t.Context(), fed, client.RawPatch(types.MergePatchType, image)); err != nil {
		t.Fatal(err)
	}
	awaitApproval(t, b, ns)
	before := snapshot(t, b, ns)

	// The resource as the host has it: member-2 waits for the approval.
	stdout, stderr, code := run(t, b, "fdeploy/web", "-n", ns)
	for _, want := range []string{
		"Rollout: Waves, revision 2 from revision 1\n",
		"  wave 1/2 canary: member-1 — Complete\n",
		"  wave 2/2 main: member-2 (waits for approval) — AwaitingApproval\n",
		"  Rolling out: revision 2 from 1: wave main is AwaitingApproval: the wave waits for an approval: fedwarden rollout resume\n",
		"member-1: Unchanged, wave 1/2 canary\n  why: the copy is current\n",
		"member-2: Update, wave 2/2 main\n  why: template version 1 → 2; held at revision 1: wave 2/2 main waits for an approval: fedwarden rollout resume starts it\n",
	} {
		if code != 1 || !strings.Contains(stdout, want) {
			t.Errorf("plan of the resource mid-rollout: exit code %d, want 1 and %q; stdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
		}
	}
	t.Logf("plan of the resource mid-rollout:\n%s%s", stdout, stderr)
	r := planJSON(t, b, "fdeploy/web", "-n", ns)
	ro := r.Rollout
	if !ro.Engine || ro.Note != "" || ro.Revision != 2 || ro.NewRevision || ro.FromRevision != 1 || ro.Complete || ro.Halted != nil ||
		ro.Waves[0].Phase != "Complete" || ro.Waves[1].Phase != "AwaitingApproval" || !strings.Contains(ro.Progress, "wave main is AwaitingApproval") {
		t.Errorf("plan -o json mid-rollout: rollout %+v", ro)
	}
	if c := r.Clusters[0]; c.Action != planreport.ActionUnchanged || c.Now || c.Held || c.TargetRevision != 2 {
		t.Errorf("plan -o json mid-rollout: member-1 %+v", c)
	}
	if c := r.Clusters[1]; c.Action != planreport.ActionUpdate || c.Now || !c.Held || c.TargetRevision != 1 || c.DryRun == nil || !c.DryRun.Allowed {
		t.Errorf("plan -o json mid-rollout: member-2 %+v", c)
	}

	// Revision 3: the canary wave starts again, with member-1; member-2
	// stays at revision 1.
	stdout, stderr, code = run(t, b, "-f", manifest(t, doc("nginx:1.27")))
	for _, want := range []string{
		"Rollout: Waves, revision 3 (a new revision) from revision 2\n",
		"  wave 1/2 canary: member-1 — Progressing\n",
		"  wave 2/2 main: member-2 (waits for approval) — Pending\n",
		"member-1: Update, wave 1/2 canary\n  why: template version 2 → 3; gets revision 3 now: wave 1/2 canary starts\n",
		"member-2: Update, wave 2/2 main\n  why: template version 1 → 3; held at revision 1 until wave 2/2 main starts; wave 1/2 canary before it is Progressing: " +
			"waiting for member-1 to be Healthy and InSync at the revision; then wave 2/2 main waits for an approval (fedwarden rollout resume)\n",
	} {
		if code != 1 || !strings.Contains(stdout, want) {
			t.Errorf("plan of revision 3 mid-rollout: exit code %d, want 1 and %q; stdout:\n%s\nstderr:\n%s", code, want, stdout, stderr)
		}
	}
	t.Logf("plan -f of revision 3 mid-rollout:\n%s%s", stdout, stderr)
	r = planJSON(t, b, "-f", manifest(t, doc("nginx:1.27")))
	t.Logf("plan -f of revision 3 mid-rollout, -o json:\n%s", mustJSON(t, r))
	if ro := r.Rollout; !ro.Engine || ro.Revision != 3 || !ro.NewRevision || ro.FromRevision != 2 || ro.Waves[0].Phase != "Progressing" || ro.Waves[1].Phase != "Pending" {
		t.Errorf("plan -o json of revision 3: rollout %+v", ro)
	}
	if c := r.Clusters[0]; !c.Now || c.Held || c.TargetRevision != 3 {
		t.Errorf("plan -o json of revision 3: member-1 %+v", c)
	}
	if c := r.Clusters[1]; c.Now || !c.Held || c.TargetRevision != 1 {
		t.Errorf("plan -o json of revision 3: member-2 %+v", c)
	}

	// The approval of wave main of revision 2, in the manifest: member-2
	// gets revision 2 now.
	meta := "metadata: {name: web, namespace: " + ns + "}"
	approved := strings.Replace(doc("nginx:1.26"), meta, "metadata: {name: web, namespace: "+ns+", annotations: {fedwarden.io/approve-wave: \"2/1\"}}", 1)
	stdout, stderr, code = run(t, b, "-f", manifest(t, approved))
	if code != 1 || !strings.Contains(stdout, "  wave 2/2 main: member-2 (waits for approval) — Progressing\n") ||
		!strings.Contains(stdout, "member-2: Update, wave 2/2 main\n  why: template version 1 → 2; gets revision 2 now: wave 2/2 main starts\n") {
		t.Errorf("plan of the approval: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of the approval:\n%s%s", stdout, stderr)

	// Paused: nobody gets revision 3.
	paused := strings.Replace(doc("nginx:1.27"), "strategy: Waves\n", "strategy: Waves\n    paused: true\n", 1)
	stdout, stderr, code = run(t, b, "-f", manifest(t, paused))
	if code != 1 || !strings.Contains(stdout, "Rollout: Waves, revision 3 (a new revision) from revision 2 (paused: ") ||
		!strings.Contains(stdout, "  why: template version 2 → 3; held at revision 2: the rollout is paused (spec.rollout.paused) at wave 1/2 canary: fedwarden rollout resume lets it go on\n") ||
		!strings.Contains(stdout, "  why: template version 1 → 3; held at revision 1: the rollout is paused (spec.rollout.paused) at wave 1/2 canary") {
		t.Errorf("plan of a paused rollout: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan -f of a paused rollout:\n%s%s", stdout, stderr)

	// An identity that may not read the revisions.
	blind := kubeconfigFor(t, b, "plan-reader-no-revisions", rbacv1.PolicyRule{
		APIGroups: []string{"", "core.kubefed.io", "types.kubefed.io", "scheduling.kubefed.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"},
	})
	stdout, stderr, code = clitest.Execute(plan.NewCommand, "fdeploy/web", "-n", ns, "--host-kubeconfig", blind)
	if code != 1 || !strings.Contains(stdout, "  The rollout engine was not run: plan may not list the ControllerRevisions in namespace "+ns) ||
		!strings.Contains(stdout, "when each cluster gets the change is plan's approximation.\n") || !strings.Contains(stdout, "  wave 2/2 main: member-2 (waits for approval)\n") {
		t.Errorf("plan without the right to read the revisions: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan without the right to read the revisions:\n%s%s", stdout, stderr)
	stdout, _, _ = clitest.Execute(plan.NewCommand, "fdeploy/web", "-n", ns, "--host-kubeconfig", blind, "-o", "json")
	var blindReport planreport.Report
	if err := json.Unmarshal([]byte(stdout), &blindReport); err != nil || blindReport.Rollout.Engine || !strings.Contains(blindReport.Rollout.Note, "forbidden") ||
		blindReport.Rollout.Revision != 0 || blindReport.Clusters[1].Now || blindReport.Clusters[1].TargetRevision != 0 {
		t.Errorf("plan -o json without the right to read the revisions: %v; %s", err, stdout)
	}

	if after := snapshot(t, b, ns); after != before {
		t.Errorf("plan wrote:\nbefore %s\nafter  %s", before, after)
	}
}

// TestPlanNeverPrintsSecretValues plans a new password for a
// FederatedSecret, and a new FederatedSecret: neither the report nor the
// JSON holds a value, raw or base64, old or new.
func TestPlanNeverPrintsSecretValues(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "secret")
	secret := func(name, password string) string {
		return fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: %s, namespace: %s}
spec:
  placement: {clusters: [{name: %s}, {name: %s}]}
  template:
    data: {password: %s, api-key: %s}
`, name, ns, member1, member2, base64.StdEncoding.EncodeToString([]byte(password)), base64.StdEncoding.EncodeToString([]byte("key-"+password)))
	}
	const oldPassword, newPassword = "0ld-pa55word-value", "n3w-pa55word-value"
	place(t, b, ns, secret("db", oldPassword), "secret-db")
	values := []string{oldPassword, newPassword, "key-" + oldPassword, "key-" + newPassword}
	for _, v := range slices.Clone(values) {
		values = append(values, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	for _, args := range [][]string{
		{"-f", manifest(t, secret("db", newPassword))},
		{"-f", manifest(t, secret("db", newPassword)), "-o", "json"},
		{"-f", manifest(t, secret("db2", newPassword))},
		{"-f", manifest(t, secret("db2", newPassword)), "-o", "json"},
		{"federatedsecret/db", "-n", ns, "-o", "json"},
	} {
		stdout, stderr, code := run(t, b, args...)
		for _, v := range values {
			if strings.Contains(stdout+stderr, v) {
				t.Errorf("plan %v printed a secret value %q:\n%s%s", args, v, stdout, stderr)
			}
		}
		if code == 2 || (args[0] == "-f" && !strings.Contains(stdout, "<redacted: 18 bytes")) {
			t.Errorf("plan %v: exit code %d; stdout:\n%s\nstderr:\n%s", args, code, stdout, stderr)
		}
	}
	stdout, stderr, _ := run(t, b, "-f", manifest(t, secret("db", newPassword)))
	t.Logf("plan -f of a new password:\n%s%s", stdout, stderr)
}

// TestPlanErrors: what plan cannot plan exits with 2 and says why.
func TestPlanErrors(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "errors")
	configMap := fmt.Sprintf("apiVersion: types.kubefed.io/v1beta1\nkind: FederatedConfigMap\nmetadata: {name: web, namespace: %s}\nspec: {}\n", ns)
	secretInWaves := fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedSecret
metadata: {name: db, namespace: %s}
spec:
  placement: {clusters: [{name: %s}]}
  template: {stringData: {password: not-printed}}
  rollout: {strategy: Waves, waves: [{name: first, clusters: [%s]}]}
`, ns, member1, member1)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"fdeploy/nope", "-n", ns}, want: "FederatedDeployment " + ns + "/nope not found in the host"},
		{args: []string{"configmap/web", "-n", ns}, want: "ConfigMap is not federated"},
		{args: []string{"frobnicators/web", "-n", ns}, want: `unknown federated kind "frobnicators"`},
		{args: []string{"-f", manifest(t, configMap)}, want: "unknown federated kind FederatedConfigMap.types.kubefed.io"},
		{args: []string{"-f", manifest(t, web(ns, "nginx:1.25", "")), "-n", "other"}, want: "the object is in namespace " + ns + ", -n says other"},
		{args: []string{"-f", manifest(t, secretInWaves)}, want: "FederatedSecret " + ns + "/db: the controller refuses it: spec.rollout.strategy Waves is not offered for a kind whose copies are Secrets"},
	} {
		if stdout, stderr, code := run(t, b, tt.args...); code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("plan %v: exit code %d, want 2 with %q; stdout:\n%s\nstderr:\n%s", tt.args, code, tt.want, stdout, stderr)
		}
	}
}

// planJSON runs plan -o json, which must exit 1 (changes), and decodes
// its report.
func planJSON(t *testing.T, b *inprocess.Bed, args ...string) planreport.Report {
	t.Helper()
	stdout, stderr, code := run(t, b, append(args, "-o", "json")...)
	var r planreport.Report
	if err := json.Unmarshal([]byte(stdout), &r); code != 1 || err != nil || len(r.Clusters) != 2 || len(r.Rollout.Waves) != 2 {
		t.Fatalf("plan %v -o json: exit code %d, %v; stdout:\n%s\nstderr:\n%s", args, code, err, stdout, stderr)
	}
	return r
}

// mustJSON is r as plan prints it, without the rendered copies and diffs.
func mustJSON(t *testing.T, r planreport.Report) string {
	t.Helper()
	for i := range r.Clusters {
		r.Clusters[i].Rendered = map[string]any{"…": "…"}
		if r.Clusters[i].Diff != "" {
			r.Clusters[i].Diff = "…"
		}
	}
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// awaitApproval waits until the controller has rolled revision 2 of web out
// to the canary wave (member-1) and wave main (member-2, held at revision
// 1) waits for an approval.
func awaitApproval(t *testing.T, b *inprocess.Bed, ns string) {
	t.Helper()
	poll.Eventually(t, settled, "revision 2 to reach member-1 and wave main to await an approval", func(ctx context.Context) (bool, string) {
		fed := &unstructured.Unstructured{}
		fed.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
		if err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, fed); err != nil {
			return false, err.Error()
		}
		var st typesv1beta1.FederatedStatus
		raw, _, _ := unstructured.NestedMap(fed.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			return false, err.Error()
		}
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deployment-web"}, cpv); err != nil {
			return false, err.Error()
		}
		entries := map[string]typesv1beta1.ClusterVersion{}
		for _, cv := range cpv.Status.ClusterVersions {
			entries[string(cv.ClusterName)] = cv
		}
		rolledOut := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedRolledOut)
		ok := st.Rollout != nil && st.Rollout.Revision == 2 && len(st.Rollout.Waves) == 2 && st.Rollout.Waves[1].Phase == typesv1beta1.WaveAwaitingApproval &&
			rolledOut != nil && rolledOut.ObservedGeneration == fed.GetGeneration() &&
			entries[member1].TargetRevision == 2 && entries[member1].State == typesv1beta1.InSync &&
			entries[member2].TargetRevision == 1 && entries[member2].State == typesv1beta1.RolloutPending
		return ok, fmt.Sprintf("rollout %+v; CPV %+v", st.Rollout, cpv.Status.ClusterVersions)
	})
}

// run runs plan against the bed's host as its admin.
func run(t *testing.T, b *inprocess.Bed, args ...string) (string, string, int) {
	t.Helper()
	return clitest.Execute(plan.NewCommand, append(args, "--host-kubeconfig", b.Fed.Host.Kubeconfig)...)
}

// place creates the federated resource doc and waits until the controller
// has placed it on both members, its CPV cpvName records both InSync, and
// its status says so.
func place(t *testing.T, b *inprocess.Bed, ns, doc, cpvName string) {
	t.Helper()
	u := object(t, doc)
	if err := b.Host.Create(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, settled, "the resource to be placed on both members", func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: cpvName}, cpv); err != nil {
			return false, err.Error()
		}
		fed := &unstructured.Unstructured{}
		fed.SetGroupVersionKind(u.GroupVersionKind())
		if err := b.Host.Get(ctx, client.ObjectKeyFromObject(u), fed); err != nil {
			return false, err.Error()
		}
		var st typesv1beta1.FederatedStatus
		raw, _, _ := unstructured.NestedMap(fed.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			return false, err.Error()
		}
		inSync := 0
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.State == typesv1beta1.InSync {
				inSync++
			}
		}
		propagated := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
		return inSync == 2 && propagated != nil && propagated.ObservedGeneration == fed.GetGeneration() && len(st.Clusters) == 2,
			fmt.Sprintf("CPV %+v; resource status %+v", cpv.Status, st)
	})
}

// snapshot names the resourceVersions of what plan could write in ns: the
// federated resources, CPVs and revisions of the host, the copies in the
// members.
func snapshot(t *testing.T, b *inprocess.Bed, ns string) string {
	t.Helper()
	var parts []string
	add := func(c client.Client, where string, list client.ObjectList) {
		if err := c.List(t.Context(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			m, _ := meta.Accessor(o)
			parts = append(parts, fmt.Sprintf("%s %T %s@%s", where, o, m.GetName(), m.GetResourceVersion()))
			return nil
		})
	}
	for _, kind := range []string{"FederatedDeploymentList", "FederatedSecretList"} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind(kind))
		add(b.Host, "host", list)
	}
	add(b.Host, "host", &typesv1beta1.ClusterPropagatedVersionList{})
	add(b.Host, "host", &appsv1.ControllerRevisionList{})
	for _, m := range []string{member1, member2} {
		add(b.Members[m], m, &appsv1.DeploymentList{})
		add(b.Members[m], m, &corev1.SecretList{})
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// refuseLatest installs in member-2 a ValidatingAdmissionPolicy, bound to
// ns, that refuses Deployments with an image tagged :latest, and waits
// until the member enforces it.
func refuseLatest(t *testing.T, b *inprocess.Bed, ns, message string) {
	t.Helper()
	name := "no-latest-" + ns
	policy, binding := fedtest.RefusingPolicy(name, ns, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
	}, "object.spec.template.spec.containers.all(c, !c.image.endsWith(':latest'))", message)
	member := b.Members[member2]
	for _, o := range []client.Object{policy, binding} {
		if err := member.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = member.Delete(context.Background(), binding)
		_ = member.Delete(context.Background(), policy)
	})
	poll.Eventually(t, 30*time.Second, "member-2 to enforce the policy", func(ctx context.Context) (bool, string) {
		d := deployment(t, b, member2, ns)
		d.Spec.Template.Spec.Containers[0].Image = "nginx:latest"
		err := member.Update(ctx, d, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), message), fmt.Sprint(err)
	})
}

// readOnlyKubeconfig returns a kubeconfig of the host for an identity that
// may get, list and watch everything, and write nothing.
func readOnlyKubeconfig(t *testing.T, b *inprocess.Bed) string {
	t.Helper()
	return kubeconfigFor(t, b, "plan-reader", rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}})
}

// kubeconfigFor returns a kubeconfig of the host for the identity name,
// a ServiceAccount with rules over the whole host.
func kubeconfigFor(t *testing.T, b *inprocess.Bed, name string, rules ...rbacv1.PolicyRule) string {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: "default"}},
	}
	for _, o := range []client.Object{sa, role, binding} {
		if err := b.Host.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, o := range []client.Object{binding, role, sa} {
			_ = b.Host.Delete(context.Background(), o)
		}
	})
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}
	if err := b.Host.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: b.Fed.Host.Endpoint, CertificateAuthorityData: b.Fed.Host.CAData}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["reader"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: name}
	kc.CurrentContext = "reader"
	return clitest.WriteKubeconfig(t, kc)
}

func deployment(t *testing.T, b *inprocess.Bed, member, ns string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.Members[member].Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	return d
}

// manifest writes doc to a file of the test and returns its path.
func manifest(t *testing.T, doc string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// TestPlanWhatIfDown plans a resource whose replicas a
// ReplicaSchedulingPreference divides 2/2 as if member-2 had failed: under
// its failover policy member-1 would run all 4, and member-2 is neither
// contacted nor written; without a policy the plan says that an outage
// moves nothing. Nothing is written.
func TestPlanWhatIfDown(t *testing.T) {
	b := shared.Bed(t)
	t.Parallel()
	ns := b.Namespace(t, "whatifdown")
	for _, name := range []string{"divided", "unguarded"} {
		policy := ""
		if name == "divided" {
			policy = "\n    failover: {tolerationSeconds: 30}"
		}
		place(t, b, ns, fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  placement:
    clusters: [{name: %[3]s}, {name: %[4]s}]%[5]s
  template:
    spec:
      replicas: 1
      selector: {matchLabels: {app: %[1]s}}
      template:
        metadata: {labels: {app: %[1]s}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`, name, ns, member1, member2, policy), "deployment-"+name)
		if err := b.Host.Create(t.Context(), object(t, fmt.Sprintf(`apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: %s, namespace: %s}
spec: {targetKind: FederatedDeployment, totalReplicas: 4}
`, name, ns))); err != nil {
			t.Fatal(err)
		}
		poll.Eventually(t, settled, name+" divided 2/2", func(ctx context.Context) (bool, string) {
			cpv := &typesv1beta1.ClusterPropagatedVersion{}
			if err := b.Host.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deployment-" + name}, cpv); err != nil {
				return false, err.Error()
			}
			ok := len(cpv.Spec.Clusters) == 2
			for _, pc := range cpv.Spec.Clusters {
				ok = ok && pc.Replicas != nil && *pc.Replicas == 2
			}
			return ok, fmt.Sprintf("%+v", cpv.Spec.Clusters)
		})
	}
	before := snapshot(t, b, ns)

	stdout, stderr, code := run(t, b, "fdeploy/divided", "-n", ns, "--what-if-down", member2)
	if code != 1 || !strings.Contains(stdout, "If member-2 were down past the toleration: cluster member-2 failed over at ") ||
		!strings.Contains(stdout, "its 2 replicas run on the other Ready clusters, and its copy is kept") ||
		!strings.Contains(stdout, "member-1: Update, wave 1/1 all, 4 replicas") ||
		!strings.Contains(stdout, "member-2: Unchanged, wave 1/1 all, 2 replicas\n  why: planned as down (--what-if-down)") {
		t.Errorf("plan --what-if-down of a resource with a failover policy: exit code %d, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	t.Logf("plan --what-if-down:\n%s%s", stdout, stderr)

	stdout, stderr, code = run(t, b, "fdeploy/unguarded", "-n", ns, "--what-if-down", member2)
	if code != 0 || !strings.Contains(stdout, "If member-2 were down past the toleration: no failover policy applies") {
		t.Errorf("plan --what-if-down of a resource without a failover policy: exit code %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	_, stderr, code = run(t, b, "fdeploy/divided", "-n", ns, "--what-if-down", "member-9")
	if code != 2 || !strings.Contains(stderr, "--what-if-down member-9: no FederatedCluster of that name is joined") {
		t.Errorf("plan --what-if-down of a cluster not joined: exit code %d, want 2; stderr:\n%s", code, stderr)
	}
	if after := snapshot(t, b, ns); after != before {
		t.Errorf("plan wrote:\nbefore %s\nafter  %s", before, after)
	}
}
