package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// scaleManager is the field manager the tests scale member copies as.
// (kubectl scale itself sends none: the member then names the manager
// after its User-Agent, kubectl.)
const scaleManager = "kubectl-scale"

const replicasPath = "/spec/replicas"

// scaleTarget is a member cluster whose copies a test scales, and the host
// that places them there.
type scaleTarget struct {
	host      client.Client
	namespace string
	cluster   string
	// events is the namespace of the Events about the copies: namespace,
	// or the control-plane namespace, where a Pull cluster's agent records.
	events string
	// member is a client of the member as its admin; apps is its apps/v1
	// REST client, for the scale subresource.
	member client.Client
	apps   rest.Interface
	// hostKubeconfig is set when `fedwarden diff` can read the member (a
	// Push cluster).
	hostKubeconfig string
}

// newScaleTarget returns the target of cluster, whose API server cfg
// reaches as its admin, in a new test namespace of the host.
func newScaleTarget(t *testing.T, host client.Client, cluster string, cfg *rest.Config) scaleTarget {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ns := testNamespace(t, host)
	return scaleTarget{host: host, namespace: ns, events: ns, cluster: cluster, member: newClient(t, cfg), apps: cs.AppsV1().RESTClient()}
}

// scale sets the replicas of a member's Deployment as `kubectl scale`
// does: a merge patch of its scale subresource, here as scaleManager.
func (s scaleTarget) scale(t *testing.T, name string, replicas int32) {
	t.Helper()
	err := s.apps.Patch(types.MergePatchType).
		Namespace(s.namespace).Resource("deployments").Name(name).SubResource("scale").
		Param("fieldManager", scaleManager).
		Body([]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))).
		Do(t.Context()).Error()
	if err != nil {
		t.Fatalf("scaling Deployment %s/%s in %s to %d: %v", s.namespace, name, s.cluster, replicas, err)
	}
}

// deployment reads a member's Deployment.
func (s scaleTarget) deployment(ctx context.Context, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := s.member.Get(ctx, types.NamespacedName{Namespace: s.namespace, Name: name}, d); err != nil {
		return nil, err
	}
	if d.Spec.Replicas == nil {
		return nil, fmt.Errorf("deployment %s/%s has no spec.replicas", s.namespace, name)
	}
	return d, nil
}

// replicas returns the spec.replicas of a member's Deployment.
func (s scaleTarget) replicas(ctx context.Context, name string) (int32, error) {
	d, err := s.deployment(ctx, name)
	if err != nil {
		return 0, err
	}
	return *d.Spec.Replicas, nil
}

// waitForReplicas waits until the member's Deployment has replicas.
func (s scaleTarget) waitForReplicas(t *testing.T, name string, want int32) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("Deployment %s/%s in %s to have %d replicas", s.namespace, name, s.cluster, want), func(ctx context.Context) (bool, string) {
		n, err := s.replicas(ctx, name)
		return err == nil && n == want, fmt.Sprint(n, err)
	})
}

// place creates a FederatedDeployment of 5 replicas on the target's
// cluster, with spec (YAML under spec, indented by two spaces) besides the
// placement, and waits until its copy is there and InSync.
func (s scaleTarget) place(t *testing.T, name, spec string) {
	t.Helper()
	createObject(t, s.host, newFederatedDeployment(t, s.namespace, name, 5, placedOn(s.cluster)+spec))
	waitForCPV(t, s.host, s.namespace, "deployment-"+name, "1", "1", s.cluster)
	s.waitForReplicas(t, name, 5)
}

// keptInSync checks, after two periodic resyncs (each looks at the copy),
// that the member's Deployment still has replicas, that its CPV entry is
// InSync and that no drift of it was reported.
func (s scaleTarget) keptInSync(t *testing.T, name string, replicas int32) {
	t.Helper()
	time.Sleep(2 * resyncPeriod)
	if n, err := s.replicas(t.Context(), name); err != nil || n != replicas {
		t.Errorf("%s: the member's replicas became %d (%v); want the scale to %d kept", name, n, err, replicas)
	}
	waitForEntry(t, s.host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.InSync
	})
	for _, e := range eventsOf(t, s.host, s.events, name) {
		if strings.HasPrefix(e, typesv1beta1.EventDriftDetected) {
			t.Errorf("%s: a scale that is not drift was reported: %s", name, e)
		}
	}
}

// run checks invariant 2 of the safety contract for writes through the
// scale subresource, on the target's cluster: a scale is drift, healed
// under Enforce and reported under Alert with the path and who made it,
// unless the resource ignores its manager or retains the member's
// replicas.
func (s scaleTarget) run(t *testing.T) {
	t.Run("kubectl scale is drift: Enforce heals it", func(t *testing.T) {
		t.Parallel()
		s.place(t, "scaled", "")
		s.scale(t, "scaled", 1)
		waitForEvent(t, s.host, s.events, "scaled", typesv1beta1.EventDriftDetected, s.cluster, string(typesv1beta1.ModifiedOutOfBand), replicasPath, scaleManager, "re-applied")
		s.waitForReplicas(t, "scaled", 5)
		waitForEntry(t, s.host, s.namespace, "deployment-scaled", s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.InSync && cv.Remediation == typesv1beta1.RemediationEnforce
		})
	})

	t.Run("kubectl scale is drift: Alert reports the path and who scaled", func(t *testing.T) {
		t.Parallel()
		s.place(t, "reported", "\n  driftPolicy: {remediation: Alert}")
		s.scale(t, "reported", 1)
		entry := waitForEntry(t, s.host, s.namespace, "deployment-reported", s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.ModifiedOutOfBand
		})
		if !slices.Equal(entry.ChangedPaths, []string{replicasPath}) || !slices.Equal(entry.ChangedBy, []string{scaleManager}) || entry.Remediation != typesv1beta1.RemediationAlert {
			t.Errorf("CPV entry of %s = %+v, want %s changed by %s, remediation Alert", s.cluster, entry, replicasPath, scaleManager)
		}
		waitForEvent(t, s.host, s.events, "reported", typesv1beta1.EventDriftDetected, s.cluster, replicasPath, scaleManager, "left as it is")
		time.Sleep(2 * resyncPeriod) // periodic resyncs leave it too
		if n, err := s.replicas(t.Context(), "reported"); err != nil || n != 1 {
			t.Errorf("under Alert the scale was undone: %d replicas (%v), want 1", n, err)
		}
		if s.hostKubeconfig == "" {
			return
		}
		r := runFedwarden(t, "diff", "fdeploy/reported", "-n", s.namespace, "--host-kubeconfig", s.hostKubeconfig)
		if r.code != 1 || !strings.Contains(r.stdout, "-  replicas: 5\n+  replicas: 1\n") || !strings.Contains(r.stderr, "changed "+replicasPath+" (by "+scaleManager+")") {
			t.Errorf("fedwarden diff of a scaled copy: want exit 1, the replicas and who scaled\n%s", r)
		}
	})

	t.Run("ignoreManagers: the manager's scale is kept and InSync", func(t *testing.T) {
		t.Parallel()
		s.place(t, "autoscaled", "\n  driftPolicy: {ignoreManagers: ["+scaleManager+"]}")
		s.scale(t, "autoscaled", 2)
		s.keptInSync(t, "autoscaled", 2)
		if s.hostKubeconfig != "" {
			if r := runFedwarden(t, "diff", "fdeploy/autoscaled", "-n", s.namespace, "--host-kubeconfig", s.hostKubeconfig); r.code != 0 {
				t.Errorf("fedwarden diff of a copy scaled by an ignored manager: want exit 0\n%s", r)
			}
		}
		// Not drift is not retained: a new template version writes the
		// template's replicas (docs/drift.md says so; retainReplicas keeps them).
		patchFederated(t, s.host, s.namespace, "autoscaled", setImage(t, "nginx:1.28"))
		waitForCPV(t, s.host, s.namespace, "deployment-autoscaled", "2", "1", s.cluster)
		s.waitForReplicas(t, "autoscaled", 5)
	})

	t.Run("retainReplicas: the member's scale is kept and InSync", func(t *testing.T) {
		t.Parallel()
		s.place(t, "retained", "\n  retainReplicas: true")
		s.scale(t, "retained", 3)
		s.keptInSync(t, "retained", 3)
		// Kept through a write too: a new template version.
		patchFederated(t, s.host, s.namespace, "retained", setImage(t, "nginx:1.28"))
		waitForCPV(t, s.host, s.namespace, "deployment-retained", "2", "1", s.cluster)
		d, err := s.deployment(t.Context(), "retained")
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 || d.Spec.Template.Spec.Containers[0].Image != "nginx:1.28" {
			t.Errorf("after a new template version: %d replicas of %s, want the member's 3 of nginx:1.28", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
		}
	})
}

// Invariant 2 of the safety contract, in push mode: drift compares what is
// written through every subresource but status, so `kubectl scale` of a
// member's copy is drift; a resource lets a manager (an autoscaler) own
// replicas with driftPolicy.ignoreManagers or retainReplicas.
func TestEveryWriterOfADesiredFieldIsSeen(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	s := newScaleTarget(t, host, fed.Members[0].Name, fed.Members[0].Config)
	s.hostKubeconfig = fed.Host.Kubeconfig
	s.run(t)
	t.Run("admission bounds ignoreManagers", func(t *testing.T) {
		t.Parallel()
		many := make([]string, 33)
		for i := range many {
			many[i] = fmt.Sprintf("m%d", i)
		}
		for _, tt := range []struct{ policy, field, why string }{
			{"{ignoreManagers: [" + strings.Repeat("m", 129) + "]}", "spec.driftPolicy.ignoreManagers[0]", "Too long"},
			{"{ignoreManagers: [" + strings.Join(many, ", ") + "]}", "spec.driftPolicy.ignoreManagers", "Too many"},
			{"{ignoreManagers: [kubectl, kubectl]}", "spec.driftPolicy.ignoreManagers[1]", "Duplicate value"},
			{"{clusters: [{name: " + s.cluster + ", ignoreManagers: ['']}]}", "spec.driftPolicy.clusters[0].ignoreManagers[0]", "at least 1 chars long"},
		} {
			obj := newFederatedDeployment(t, s.namespace, "bounded", 1, "  driftPolicy: "+tt.policy)
			rejected(t, host.Create(t.Context(), obj, client.DryRunAll), tt.field, tt.why)
		}
	})
}

// The same in pull mode: the Pull cluster's agent sees the scale of its
// copies, heals or reports it, and keeps it where the resource says so.
// The pull bed is a federation of its own.
func TestEveryWriterOfADesiredFieldIsSeenInPullMode(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startPullBed(t)
	s := newScaleTarget(t, b.host, b.pull.Name, b.pull.Config)
	s.events = corev1beta1.DefaultFederationNamespace
	s.run(t)
}
