package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/poll"
)

// applyPullSample applies KubeFed's sample1 FederatedDeployment with
// kubectl to namespace of the pull bed's host, its clusters renamed after
// the bed's members: cluster1 is the Push member, cluster2 (5 replicas of
// nginx:1.17.0-alpine) the Pull member.
func applyPullSample(t *testing.T, b *pullBed, namespace string) {
	t.Helper()
	obj := loadManifest(t, "kubefed-v0.10.0/sample1/federateddeployment.yaml")
	obj.SetNamespace(namespace)
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.NewReplacer(`"cluster1"`, `"`+b.push.Name+`"`, `"cluster2"`, `"`+b.pull.Name+`"`).Replace(string(raw))
	path := filepath.Join(t.TempDir(), "federateddeployment.json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	kubectl(t, b.Host.Kubeconfig, "apply", "-f", path)
}

// cpvLabelsAndRemovals describes what of a CPV tells agents where the
// resource is placed and which copies to remove.
func cpvLabelsAndRemovals(cpv *typesv1beta1.ClusterPropagatedVersion) (labelled, removals []string) {
	for k := range cpv.Labels {
		if c, ok := strings.CutPrefix(k, typesv1beta1.LabelPlacedPrefix); ok {
			labelled = append(labelled, c)
		}
	}
	slices.Sort(labelled)
	for _, rm := range cpv.Spec.Removals {
		removals = append(removals, string(rm.Name))
	}
	return labelled, removals
}

// waitForEntries waits until the CPV's entries are those of clusters, its
// spec places the resource on them, its labels name them, and no removal
// is pending.
func waitForEntries(t *testing.T, c client.Client, namespace, name string, clusters ...string) {
	t.Helper()
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("CPV %s/%s with entries, labels and spec.clusters %v and no removal", namespace, name, clusters), func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		var entries []string
		for _, cv := range cpv.Status.ClusterVersions {
			entries = append(entries, string(cv.ClusterName))
		}
		slices.Sort(entries)
		labelled, removals := cpvLabelsAndRemovals(cpv)
		return slices.Equal(entries, clusters) && slices.Equal(labelled, clusters) && slices.Equal(cpvClusterNames(cpv), clusters) && len(removals) == 0,
			fmt.Sprintf("entries %v, labels %v, spec.clusters %v, removals %v", entries, labelled, cpvClusterNames(cpv), removals)
	})
}

// setPlacement places the FederatedDeployment namespace/name on clusters.
func setPlacement(t *testing.T, c client.Client, namespace, name string, clusters ...string) {
	t.Helper()
	patchFederated(t, c, namespace, name, func(obj *unstructured.Unstructured) {
		list := make([]any, 0, len(clusters))
		for _, n := range clusters {
			list = append(list, map[string]any{"name": n})
		}
		setNested(t, obj.Object, list, "spec", "placement", "clusters")
	})
}

// Invariant 1 of the safety contract, in pull mode: a Pull cluster's
// agent deletes its copy only on an explicit instruction from the host,
// the placement dropped (the CPV's spec.removals) or the federated
// resource deleted, never because a CPV is missing from its cache. This is
// the case: KubeFed's sample1 Deployment reaches a Pull member
// through its agent, then `kubectl delete cpv --all` runs in its namespace
// on the host. The member's Deployment is kept (same UID, no write), the
// CPV comes back with the agent's entry, and a later placement drop does
// delete the copy and its entry; deleting the resource then completes.
func TestPullAgentDeletesOnlyOnTheHostsInstruction(t *testing.T) {
	skipInShortMode(t)
	kubectlPath(t)
	t.Parallel()
	b := startPullBed(t)
	ns := testNamespace(t, b.host)
	const name, cpvName = "test-deployment", "deployment-test-deployment"
	members := map[string]client.Client{b.push.Name: newClient(t, b.push.Config), b.pull.Name: newClient(t, b.pull.Config)}
	pullMember := members[b.pull.Name]

	applyPullSample(t, b, ns)
	cpv := waitForCPV(t, b.host, ns, cpvName, "1", "1", b.pull.Name, b.push.Name)
	poll.Eventually(t, 30*time.Second, "the sample's cluster2 Deployment in the Pull member", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := pullMember.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
			return false, err.Error()
		}
		return *d.Spec.Replicas == 5 && d.Spec.Template.Spec.Containers[0].Image == "nginx:1.17.0-alpine", fmt.Sprintf("%d replicas of %s", *d.Spec.Replicas, d.Spec.Template.Spec.Containers[0].Image)
	})
	// The members run no controllers: a copy's resourceVersion moves only
	// when Fedwarden writes it.
	before := copyIdentities(t, members, ns, name)
	agentWrites, _, err := b.agent.Sum(t.Context(), "fedwarden_member_writes_total")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("kubectl delete cpv --all keeps the copies", func(t *testing.T) {
		out := kubectl(t, b.Host.Kubeconfig, "delete", "cpv", "--all", "-n", ns)
		if !strings.Contains(out, cpvName) {
			t.Fatalf("kubectl delete cpv --all -n %s deleted nothing: %s", ns, out)
		}
		// The issue saw the copy gone or replaced within 10 s: watch twice
		// as long.
		for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
			d := &appsv1.Deployment{}
			err := pullMember.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d)
			if err != nil || string(d.UID) != before[b.pull.Name].uid || d.DeletionTimestamp != nil {
				t.Fatalf("%s after the CPV was deleted: the Pull member's Deployment is gone or replaced: %v, uid %s (was %s), deletionTimestamp %v",
					time.Since(start).Round(time.Millisecond), err, d.UID, before[b.pull.Name].uid, d.DeletionTimestamp)
			}
		}
	})

	t.Run("the CPV comes back with the agent's entry, and nothing was written", func(t *testing.T) {
		rebuilt := waitForRebuiltCPV(t, b.host, ns, cpvName, cpv.UID, b.pull.Name, b.push.Name)
		if got := entryManagers(t, b.host, ns, cpvName)[b.pull.Name]; !slices.Equal(got, []string{registration.AgentFieldManager(b.pull.Name)}) {
			t.Errorf("the Pull cluster's entry of the rebuilt CPV is owned by %v, want only its agent", got)
		}
		checkCopiesUntouched(t, members, ns, name, before)
		if n, _, err := b.agent.Sum(t.Context(), "fedwarden_member_writes_total"); err != nil || n != agentWrites {
			t.Errorf("the agent wrote to its cluster while the CPV was deleted and rebuilt: %v writes, was %v (%v)", n, agentWrites, err)
		}
		cpv = rebuilt
	})

	t.Run("a placement drop removes the entry of a cluster that holds no copy", func(t *testing.T) {
		// The agent reports AlreadyExists for a Deployment it does not
		// manage, and so holds no copy: its entry must still go when the
		// placement drops its cluster, or the resource's deletion waits
		// for it forever.
		taken := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "taken"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "taken"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
				},
			},
		}
		createObject(t, pullMember, taken)
		createObject(t, b.host, newFederatedDeployment(t, ns, "taken", 1, placedOn(b.push.Name, b.pull.Name)))
		waitForEntry(t, b.host, ns, "deployment-taken", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.AlreadyExists
		})
		setPlacement(t, b.host, ns, "taken", b.push.Name)
		waitForEntries(t, b.host, ns, "deployment-taken", b.push.Name)
		kept := &appsv1.Deployment{}
		if err := pullMember.Get(t.Context(), client.ObjectKeyFromObject(taken), kept); err != nil || kept.UID != taken.UID {
			t.Errorf("the Deployment Fedwarden does not manage was touched: %v, uid %s (was %s)", err, kept.UID, taken.UID)
		}
		fd := newFederatedDeployment(t, ns, "taken", 1, "")
		if err := b.host.Delete(t.Context(), fd); err != nil {
			t.Fatal(err)
		}
		waitForAbsent(t, b.host, fd, "the host", 60*time.Second)
	})

	t.Run("a placement drop deletes the copy, then the entry", func(t *testing.T) {
		setPlacement(t, b.host, ns, name, b.push.Name)
		waitForAbsent(t, pullMember, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, b.pull.Name, 60*time.Second)
		waitForEntries(t, b.host, ns, cpvName, b.push.Name)
	})

	t.Run("deleting the resource completes", func(t *testing.T) {
		fd := newFederatedDeployment(t, ns, name, 1, "")
		if err := b.host.Delete(t.Context(), fd); err != nil {
			t.Fatal(err)
		}
		waitForAbsent(t, b.host, fd, "the host", 60*time.Second)
		waitForAbsent(t, members[b.push.Name], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}, b.push.Name, 30*time.Second)
	})
}

// isolationDenial checks that err is the isolation policy's refusal, and
// that its message names the agent of cluster and says what it tried
// (every part of want).
func isolationDenial(t *testing.T, err error, cluster string, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("allowed; want a denial by %s saying %q", registration.AgentIsolationPolicyName, want)
		return
	}
	msg := err.Error()
	t.Logf("denied: %s", msg)
	parts := append([]string{registration.AgentIsolationPolicyName, "the agent of cluster " + cluster}, want...)
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("the denial does not say %q: %v", p, err)
		}
	}
}

// ownEntry returns cluster's entry of the CPV namespace/name, as applied.
func ownEntry(t *testing.T, c client.Client, namespace, name, cluster string) map[string]any {
	t.Helper()
	cpv, err := cpvOf(t.Context(), c, namespace, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == cluster {
			entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cv)
			if err != nil {
				t.Fatal(err)
			}
			return entry
		}
	}
	t.Fatalf("no entry of %s in CPV %s/%s: %+v", cluster, namespace, name, cpv.Status)
	return nil
}

// setLeaseDuration sets the leaseDurationSeconds of the agent's Lease as c.
func setLeaseDuration(ctx context.Context, c client.Client, key types.NamespacedName, seconds int32) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := c.Get(ctx, key, lease); err != nil {
			return err
		}
		lease.Spec.LeaseDurationSeconds = &seconds
		return c.Update(ctx, lease)
	})
}

// Invariant 5 of the safety contract: the agent stays in its lane. With
// its real token, the isolation policy refuses it an entry in a CPV not
// placed on its cluster (it may only remove its entry once the host tells
// it to remove its copy), Events outside the control-plane namespace, and
// a Lease duration out of bounds; the same writes within its lane are
// allowed.
func TestTheAgentStaysInItsLane(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startPullBed(t)
	ns := testNamespace(t, b.host)
	agent := agentHostClient(t, b.agentHost)
	pull, manager := b.pull.Name, registration.AgentFieldManager(b.pull.Name)
	controlPlane := corev1beta1.DefaultFederationNamespace
	createObject(t, b.host, newFederatedDeployment(t, ns, "placed", 1, placedOn(b.push.Name, pull)))
	createObject(t, b.host, newFederatedDeployment(t, ns, "elsewhere", 1, placedOn(b.push.Name)))
	waitForCPV(t, b.host, ns, "deployment-placed", "1", "1", pull, b.push.Name)
	waitForCPV(t, b.host, ns, "deployment-elsewhere", "1", "1", b.push.Name)
	own := ownEntry(t, b.host, ns, "deployment-placed", pull)
	// From here on, the test writes as the agent; the agent itself stops,
	// so that it neither races the test nor repairs what the test does.
	if err := b.agent.Stop(); err != nil {
		t.Fatal(err)
	}

	t.Run("its entry only in a CPV placed on its cluster", func(t *testing.T) {
		entry := map[string]any{"clusterName": pull, "state": "InSync", "templateVersion": "1", "overrideVersion": "1"}
		err := applyEntry(t.Context(), agent, ns, "deployment-elsewhere", manager, entry)
		isolationDenial(t, err, pull, "may not write its entry", "ClusterPropagatedVersion "+ns+"/deployment-elsewhere", "does not place the resource on its cluster")
		if err := applyEntry(t.Context(), agent, ns, "deployment-placed", manager, own); err != nil {
			t.Errorf("the agent may write its own entry where it is placed, but: %v", err)
		}
	})

	t.Run("once told to remove its copy, it may only remove its entry", func(t *testing.T) {
		setPlacement(t, b.host, ns, "placed", b.push.Name)
		poll.Eventually(t, 30*time.Second, "the host to tell "+pull+" to remove its copy", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, b.host, ns, "deployment-placed")
			if err != nil {
				return false, err.Error()
			}
			labelled, removals := cpvLabelsAndRemovals(cpv)
			return slices.Equal(removals, []string{pull}) && slices.Contains(labelled, pull) && slices.Equal(cpvClusterNames(cpv), []string{b.push.Name}),
				fmt.Sprintf("labels %v, removals %v, spec.clusters %v", labelled, removals, cpvClusterNames(cpv))
		})
		changed := map[string]any{"clusterName": pull, "state": "InSync", "templateVersion": "1", "overrideVersion": "1", "message": "still here"}
		err := applyEntry(t.Context(), agent, ns, "deployment-placed", manager, changed)
		isolationDenial(t, err, pull, "may not write its entry", "spec.removals tells the agent to delete its copy, then remove its entry")
		if err := applyEntry(t.Context(), agent, ns, "deployment-placed", manager, nil); err != nil {
			t.Errorf("the agent may remove its entry when told to remove its copy, but: %v", err)
		}
		// The removal is done: the host drops it, and the label.
		waitForEntries(t, b.host, ns, "deployment-placed", b.push.Name)
	})

	t.Run("Events only in the control-plane namespace", func(t *testing.T) {
		regarding := corev1.ObjectReference{APIVersion: typesv1beta1.GroupVersion.String(), Kind: "FederatedDeployment", Namespace: ns, Name: "placed"}
		event := func(namespace string) *eventsv1.Event {
			return &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "placed-"},
				EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "fedwarden-propagation", ReportingInstance: "fedwarden-propagation-test",
				Action: "Detect", Reason: typesv1beta1.EventDriftDetected, Note: "cluster " + pull + ": a test", Type: corev1.EventTypeWarning, Regarding: regarding,
			}
		}
		isolationDenial(t, agent.Create(t.Context(), event(ns)), pull, "may only create or change Events in the control-plane namespace "+controlPlane, "create Event "+ns+"/")
		legacy := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "placed-"}, InvolvedObject: regarding,
			Reason: typesv1beta1.EventDriftDetected, Message: "a test", Type: corev1.EventTypeWarning, Source: corev1.EventSource{Component: "fedwarden-agent"},
		}
		isolationDenial(t, agent.Create(t.Context(), legacy), pull, "create Event "+ns+"/")
		if err := agent.Create(t.Context(), event(controlPlane)); err != nil {
			t.Errorf("the agent may record an Event about a resource of %s in %s, but: %v", ns, controlPlane, err)
		}
	})

	t.Run("its Lease duration within bounds", func(t *testing.T) {
		key := types.NamespacedName{Namespace: controlPlane, Name: registration.AgentLeaseName(pull)}
		for _, seconds := range []int32{1, 9, 601, 86400} {
			err := setLeaseDuration(t.Context(), agent, key, seconds)
			isolationDenial(t, err, pull, fmt.Sprintf("may not set leaseDurationSeconds of Lease %s to %d", key, seconds), "between 10 and 600 seconds")
		}
		for _, seconds := range []int32{10, 600, int32(pullLeaseDuration / time.Second)} {
			if err := setLeaseDuration(t.Context(), agent, key, seconds); err != nil {
				t.Errorf("the agent may set its Lease's duration to %d s, but: %v", seconds, err)
			}
		}
		// Another Lease it may not even read: RBAC, before the policy.
		other := types.NamespacedName{Namespace: controlPlane, Name: registration.AgentLeaseName(b.push.Name)}
		if err := setLeaseDuration(t.Context(), agent, other, 30); !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
			t.Errorf("the agent wrote Lease %s: %v", other, err)
		}
	})
}
