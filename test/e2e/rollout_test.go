package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// imagePullFailed is a KWOK Stage that keeps a Pod of image nginx:bad
// Pending, its container waiting on ErrImagePull, as a kubelet that cannot
// pull the image does. Its weight makes KWOK choose it over the default
// pod-ready Stage, which matches the same Pods.
const imagePullFailed = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-failed
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - {key: '.metadata.deletionTimestamp', operator: 'DoesNotExist'}
    - {key: '.spec.containers[0].image', operator: 'In', values: ['nginx:bad']}
    - {key: '.status.phase', operator: 'In', values: ['Pending']}
  weight: 10000
  next:
    statusTemplate: |
      conditions:
      - type: Ready
        status: "False"
        reason: ContainersNotReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        state:
          waiting:
            reason: ErrImagePull
            message: pull access denied for nginx
      {{ end }}
      phase: Pending
`

// rolloutBed is a federation of four members in two waves, each member
// with a KWOK Node on which the Deployments' Pods become Ready (or, for
// image nginx:bad, never do).
type rolloutBed struct {
	*localfed.Federation
	bed     *fedtest.Bed
	host    client.Client
	members map[string]client.Client
	cm      *controllerManager
	// ns is the test's namespace.
	ns string
	// t is the test the bed belongs to: what it starts ends with it, even
	// when a subtest starts it.
	t *testing.T
}

var (
	firstWave  = []string{"wave1-a", "wave1-b"}
	secondWave = []string{"wave2-a", "wave2-b"}
)

func startRolloutBed(t *testing.T) *rolloutBed {
	t.Helper()
	stage := filepath.Join(t.TempDir(), "image-pull-failed.yaml")
	if err := os.WriteFile(stage, []byte(imagePullFailed), 0o600); err != nil {
		t.Fatal(err)
	}
	fb, cm := startJoinedBed(t, fedtest.Options{
		Federation: []localfed.Option{localfed.WithMemberNames(append(append([]string{}, firstWave...), secondWave...)...)},
		KWOK:       true, KWOKOptions: []fedtest.KWOKOption{fedtest.WithKWOKStages(stage)},
	}, steadyProbes, rolloutFlags...)
	b := &rolloutBed{Federation: fb.Fed, bed: fb, host: fb.Host, members: fb.Members, cm: cm, t: t}
	enableDeploymentsIn(t, b.host)
	return b
}

// rolloutFlags are the controller-manager's flags in a rolloutBed.
var rolloutFlags = []string{"--resync-period", "5s", "--leader-elect=false"}

// startControllerManager starts a controller-manager, stopped when the
// bed's test ends.
func (b *rolloutBed) startControllerManager() {
	b.t.Helper()
	b.cm = startControllerManager(b.t, b.bed, steadyProbes, rolloutFlags...)
}

// images returns each member's image of Deployment namespace/name.
func (b *rolloutBed) images(ctx context.Context, namespace, name string) map[string]string {
	out := map[string]string{}
	for m, c := range b.members {
		img, err := memberImage(ctx, c, namespace, name)
		if err != nil {
			img = err.Error()
		}
		out[m] = img
	}
	return out
}

// waitForImages waits until the members of each wave run the image given.
func (b *rolloutBed) waitForImages(t *testing.T, namespace, name, first, second string) {
	t.Helper()
	poll.Eventually(t, 90*time.Second, fmt.Sprintf("the first wave at %s and the second at %s", first, second), func(ctx context.Context) (bool, string) {
		imgs := b.images(ctx, namespace, name)
		for _, m := range firstWave {
			if imgs[m] != first {
				return false, fmt.Sprint(imgs)
			}
		}
		for _, m := range secondWave {
			if imgs[m] != second {
				return false, fmt.Sprint(imgs)
			}
		}
		return true, ""
	})
}

// setImage changes the FederatedDeployment's template image.
func (b *rolloutBed) setImage(t *testing.T, namespace, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q,"imagePullPolicy":"IfNotPresent"}]}}}}}}`, image)
	fd := &unstructured.Unstructured{}
	fd.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
	fd.SetNamespace(namespace)
	fd.SetName(name)
	if err := b.host.Patch(t.Context(), fd, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("setting the image to %s: %v", image, err)
	}
}

// rolloutCondition returns the federated resource's condition typ.
func (b *rolloutBed) rolloutCondition(ctx context.Context, namespace, name, typ string) (*typesv1beta1.RolloutStatus, string, error) {
	_, st, err := federatedStatus(ctx, b.host, namespace, name)
	if err != nil {
		return nil, "", err
	}
	c := meta.FindStatusCondition(st.Conditions, typ)
	if c == nil {
		return st.Rollout, "", nil
	}
	return st.Rollout, fmt.Sprintf("%s/%s: %s", c.Status, c.Reason, c.Message), nil
}

// waitRolledOut waits until RolledOut is True in a status of the
// resource's current generation, as `fedwarden rollout status` does: the
// copies of a change are written before the status that records it, so
// until then the status, RolledOut True included, is the previous
// revision's.
func (b *rolloutBed) waitRolledOut(t *testing.T, namespace, name string) *typesv1beta1.RolloutStatus {
	t.Helper()
	var st *typesv1beta1.RolloutStatus
	poll.Eventually(t, 120*time.Second, "the rollout to complete", func(ctx context.Context) (bool, string) {
		obj, fst, err := federatedStatus(ctx, b.host, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		st = fst.Rollout
		if fst.ObservedGeneration < obj.GetGeneration() {
			return false, fmt.Sprintf("the status is of generation %d, the resource's is %d", fst.ObservedGeneration, obj.GetGeneration())
		}
		c := meta.FindStatusCondition(fst.Conditions, typesv1beta1.FederatedRolledOut)
		if c == nil {
			return false, "no RolledOut condition"
		}
		return c.Status == metav1.ConditionTrue, fmt.Sprintf("RolledOut %s/%s: %s", c.Status, c.Reason, c.Message)
	})
	return st
}

// inWaves is the FederatedDeployment name in namespace ns, of Pods
// labelled app, image nginx:1.27, one replica on the KWOK Node of each
// member, rolled out in two waves, the first baked 5 s.
func inWaves(name, ns, app string) string {
	return fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %s, namespace: %s}
spec:
  template:
    spec:
      replicas: 1
      progressDeadlineSeconds: 15
      selector: {matchLabels: {app: %[3]s}}
      template:
        metadata: {labels: {app: %[3]s}}
        spec:
          nodeName: %[4]s
          containers: [{name: web, image: "nginx:1.27", imagePullPolicy: IfNotPresent}]
  placement: {clusters: [{name: wave1-a}, {name: wave1-b}, {name: wave2-a}, {name: wave2-b}]}
  rollout:
    strategy: Waves
    progressDeadlineSeconds: 120
    waves:
    - {name: first, clusters: [wave1-a, wave1-b], bakeSeconds: 5}
    - {name: second, clusters: [wave2-a, wave2-b]}
`, name, ns, app, fedtest.KWOKNodeName)
}

// A new image rolls out wave by wave: the second wave stays at the
// previous revision, RolloutPending and not drift, until the first is
// Healthy and baked; a bad image halts after the first wave; a hand edit
// in a held cluster is healed to its own revision; undo brings the first
// wave back; pause holds a new revision until resume; and a controller
// restart mid-rollout goes on where it was.
func TestRolloutInWaves(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startRolloutBed(t)
	ns := testNamespace(t, b.host)
	b.ns = ns
	createObject(t, b.host, decode(t, inWaves("web", ns, "web")))
	// A first revision has nothing to hold any cluster at: all at once.
	b.waitForImages(t, ns, "web", "nginx:1.27", "nginx:1.27")
	b.waitRolledOut(t, ns, "web")
	for _, m := range append(append([]string{}, firstWave...), secondWave...) {
		waitForEntry(t, b.host, ns, "deployment-web", m, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.Health == corev1beta1.HealthHealthy && cv.TargetRevision == 1
		})
	}

	t.Run("a good image rolls wave by wave, the CPV showing the skew", func(t *testing.T) {
		b.setImage(t, ns, "web", "nginx:1.28")
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.27")
		// The copies are written before the status that records them:
		// wait for the status of this change (template version 2).
		var cpv *typesv1beta1.ClusterPropagatedVersion
		poll.Eventually(t, 30*time.Second, "the CPV status of template version 2", func(ctx context.Context) (bool, string) {
			var err error
			cpv, err = cpvOf(ctx, b.host, ns, "deployment-web")
			return err == nil && cpv.Status.TemplateVersion == "2", fmt.Sprint(err, cpv.Status.TemplateVersion)
		})
		for _, m := range secondWave {
			held := waitForEntry(t, b.host, ns, "deployment-web", m, func(cv typesv1beta1.ClusterVersion) bool { return cv.TargetRevision == 1 })
			if held.State != typesv1beta1.RolloutPending || held.TemplateVersion != "1" {
				t.Errorf("%s during the first wave = %+v; want RolloutPending at template version 1", m, held)
			}
		}
		if *cpv.Status.DriftedClusters != 0 {
			t.Errorf("CPV status: template version %s, %d drifted; want 2 and none (held clusters are not drift)", cpv.Status.TemplateVersion, *cpv.Status.DriftedClusters)
		}
		// fedwarden rollout status waits for it, as kubectl rollout status.
		r := b.rollout(t, "status", "--timeout", "120s")
		if r.code != 0 || !strings.Contains(r.stdout, "revision 2 (from revision 1)") {
			t.Errorf("fedwarden rollout status: want exit 0 once rolled out\n%s", r)
		}
		t.Logf("fedwarden rollout status (docs/rollout.md shows it):\n%s", r.stdout)
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
		st := b.waitRolledOut(t, ns, "web")
		if st.Revision != 2 || st.FromRevision != 1 || len(st.Waves) != 2 || st.Waves[0].HealthySince == nil {
			t.Errorf("rollout status %+v", st)
		}
	})

	t.Run("a bad image halts after the first wave, the second at the old revision and not drift", func(t *testing.T) {
		b.setImage(t, ns, "web", "nginx:bad")
		r := b.rollout(t, "status", "--timeout", "120s")
		if r.code != 1 || !strings.Contains(r.stdout+r.stderr, "Degraded") {
			t.Errorf("fedwarden rollout status of a halted rollout: want exit 1 saying a cluster is Degraded\n%s", r)
		}
		t.Logf("fedwarden rollout status of the halted rollout (docs/rollout.md shows it):\n%s%s", r.stdout, r.stderr)
		poll.Eventually(t, 90*time.Second, "the rollout to halt", func(ctx context.Context) (bool, string) {
			_, cond, err := b.rolloutCondition(ctx, ns, "web", typesv1beta1.FederatedRolloutHalted)
			if err != nil {
				return false, err.Error()
			}
			return strings.HasPrefix(cond, "True/"+typesv1beta1.ReasonClusterDegraded), cond
		})
		b.waitForImages(t, ns, "web", "nginx:bad", "nginx:1.28")
		// Still halted later: the second wave never gets it.
		time.Sleep(6 * time.Second)
		b.waitForImages(t, ns, "web", "nginx:bad", "nginx:1.28")
		if r := runFedwarden(t, "drift", "-n", ns, "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 || strings.Contains(r.stdout, "wave2") {
			t.Errorf("fedwarden drift lists the held clusters as drift:\n%s", r)
		}
		waitForEvent(t, b.host, ns, "web", typesv1beta1.EventRolloutHalted, "Degraded")
	})

	t.Run("a hand edit in a held cluster is healed to its own revision", func(t *testing.T) {
		editImage(t, b.members["wave2-a"], ns, "web", "nginx:hand-edit")
		poll.Eventually(t, 30*time.Second, "wave2-a's image to be written back", func(ctx context.Context) (bool, string) {
			img, err := memberImage(ctx, b.members["wave2-a"], ns, "web")
			return err == nil && img == "nginx:1.28", fmt.Sprint(img, err)
		})
	})

	t.Run("undo brings the first wave back", func(t *testing.T) {
		if r := b.undo(t); r.code != 0 {
			t.Fatalf("fedwarden rollout undo:\n%s", r)
		}
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
		st := b.waitRolledOut(t, ns, "web")
		if st.Revision != 4 {
			t.Errorf("after undo, revision %d; want 4 (revision 2's content, renumbered)", st.Revision)
		}
		_, cond, _ := b.rolloutCondition(t.Context(), ns, "web", typesv1beta1.FederatedRolloutHalted)
		if !strings.HasPrefix(cond, "False/") {
			t.Errorf("RolloutHalted = %s after undo", cond)
		}
	})

	t.Run("pause holds a new revision until resume", func(t *testing.T) {
		if r := b.rollout(t, "pause"); r.code != 0 {
			t.Fatalf("fedwarden rollout pause:\n%s", r)
		}
		b.setImage(t, ns, "web", "nginx:1.29")
		time.Sleep(6 * time.Second)
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
		if r := b.rollout(t, "resume"); r.code != 0 {
			t.Fatalf("fedwarden rollout resume:\n%s", r)
		}
		b.waitForImages(t, ns, "web", "nginx:1.29", "nginx:1.28")
		b.waitRolledOut(t, ns, "web")
		if r := b.rollout(t, "history"); r.code != 0 || !strings.Contains(r.stdout, "REVISION") || !strings.Contains(r.stdout, "5 ") {
			t.Errorf("fedwarden rollout history: want the revisions up to 5\n%s", r)
		}
	})

	t.Run("a controller restart mid-rollout goes on where it was", func(t *testing.T) {
		prev, _, err := b.rolloutCondition(t.Context(), ns, "web", typesv1beta1.FederatedRolledOut)
		if err != nil || prev == nil {
			t.Fatalf("the rollout status before the change: %+v, %v", prev, err)
		}
		b.setImage(t, ns, "web", "nginx:1.30")
		b.waitForImages(t, ns, "web", "nginx:1.30", "nginx:1.29")
		// The first wave's copies are written before the status records
		// the new revision's start, which on a busy machine can come a
		// while later: the restart is mid-rollout once it is recorded.
		var before *typesv1beta1.RolloutStatus
		poll.Eventually(t, 30*time.Second, "the rollout status to record the new revision's first wave", func(ctx context.Context) (bool, string) {
			st, cond, err := b.rolloutCondition(ctx, ns, "web", typesv1beta1.FederatedRolledOut)
			if err != nil {
				return false, err.Error()
			}
			before = st
			return st != nil && st.Revision > prev.Revision && len(st.Waves) > 0 && st.Waves[0].StartedAt != nil, fmt.Sprintf("RolledOut %s; rollout %+v", cond, st)
		})
		if err := b.cm.stop(); err != nil {
			t.Fatal(err)
		}
		b.startControllerManager()
		b.waitForImages(t, ns, "web", "nginx:1.30", "nginx:1.30")
		after := b.waitRolledOut(t, ns, "web")
		if after.Revision != before.Revision || before.Waves[0].StartedAt == nil || !after.Waves[0].StartedAt.Equal(before.Waves[0].StartedAt) {
			t.Errorf("the rollout started again after the restart: before %+v, after %+v", before, after)
		}
	})

	t.Run("an override change rolls only to the cluster it changes", func(t *testing.T) {
		generations := map[string]int64{}
		for m, c := range b.members {
			d := &appsv1.Deployment{}
			if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
				t.Fatal(err)
			}
			generations[m] = d.Generation
		}
		patchFederated(t, b.host, ns, "web", func(fd *unstructured.Unstructured) {
			overrides := []any{map[string]any{"clusterName": "wave2-b", "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(2)}}}}
			if err := unstructured.SetNestedSlice(fd.Object, overrides, "spec", "overrides"); err != nil {
				t.Fatal(err)
			}
		})
		poll.Eventually(t, 90*time.Second, "wave2-b to run 2 replicas", func(ctx context.Context) (bool, string) {
			d := &appsv1.Deployment{}
			if err := b.members["wave2-b"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
				return false, err.Error()
			}
			if *d.Spec.Replicas == 2 {
				return true, ""
			}
			st, cond, _ := b.rolloutCondition(ctx, ns, "web", typesv1beta1.FederatedRolledOut)
			return false, fmt.Sprintf("replicas %d; RolledOut %s; rollout %+v", *d.Spec.Replicas, cond, st)
		})
		st := b.waitRolledOut(t, ns, "web")
		// The first wave, which the change does not touch, completed at
		// once, without its bake. (A sync that read the resource from a
		// cache not yet holding the last status once restarted the rollout
		// and baked it; the status write is now guarded by the
		// resourceVersion read.)
		if len(st.Waves) != 2 || st.Waves[0].HealthySince != nil {
			t.Errorf("rollout status %+v; want wave first complete without a bake (no healthySince)", st)
		}
		// No copy but wave2-b's was written.
		for m, c := range b.members {
			d := &appsv1.Deployment{}
			if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
				t.Fatal(err)
			}
			if changed := d.Generation != generations[m]; changed != (m == "wave2-b") {
				t.Errorf("%s's Deployment went from generation %d to %d; only wave2-b's should change", m, generations[m], d.Generation)
			}
		}
	})

	t.Run("a resource whose name is longer than a label value rolls out in waves", func(t *testing.T) {
		// A ControllerRevision's labels name the resource; a label value
		// has at most 63 characters, and the API server refused every
		// revision of a longer name, so that it never rolled out.
		long := "web-" + strings.Repeat("long", 16) + "-name" // 73 characters
		createObject(t, b.host, decode(t, inWaves(long, ns, "long")))
		b.waitForImages(t, ns, long, "nginx:1.27", "nginx:1.27")
		b.waitRolledOut(t, ns, long)
		b.setImage(t, ns, long, "nginx:1.28")
		b.waitForImages(t, ns, long, "nginx:1.28", "nginx:1.27")
		b.waitForImages(t, ns, long, "nginx:1.28", "nginx:1.28")
		if st := b.waitRolledOut(t, ns, long); st.Revision != 2 || st.FromRevision != 1 {
			t.Errorf("rollout status %+v; want revision 2 from revision 1", st)
		}
	})
}

// undo runs fedwarden rollout undo once, as a user would: the
// controller-manager's status writes meanwhile move the resourceVersion
// its write is guarded by, and no longer refuse it (internal/specwrite).
func (b *rolloutBed) undo(t *testing.T) result {
	t.Helper()
	return b.rollout(t, "undo")
}

// rollout runs fedwarden rollout SUBCOMMAND fdeploy/web in the test's
// namespace.
func (b *rolloutBed) rollout(t *testing.T, sub string, args ...string) result {
	t.Helper()
	return runFedwarden(t, append([]string{"rollout", sub, "fdeploy/web", "-n", b.ns, "--host-kubeconfig", b.Host.Kubeconfig}, args...)...)
}
