package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
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

// schedBed is a test bed of its own for the scheduler: three members in
// two regions, each with real Node objects (no kubelet runs: the Nodes are
// written with their status, as a kubelet would), and no deployment
// controller, so that member Deployments change only when Fedwarden writes.
type schedBed struct {
	*localfed.Federation
	host    client.Client
	members map[string]client.Client
	cm      *fedtest.ControllerManager
	// probes are cm's health-probe settings.
	probes probeSettings
}

// The members of the scheduling bed, their regions, and the CPUs their one
// Node offers.
var schedMembers = []struct {
	name, region string
	cpu          string
}{
	{"east-1", "us-east", "16"},
	{"east-2", "us-east", "4"},
	{"west-1", "eu-west", "16"},
}

func startSchedBed(t *testing.T) *schedBed {
	t.Helper()
	var names []string
	for _, m := range schedMembers {
		names = append(names, m.name)
	}
	// testOffline stops a member and waits until it is not Ready.
	s := quickProbes.fedtest("--capacity-debounce", "200ms")
	fb := fedtest.StartBed(t, fedtest.Options{Bin: fedwardenBin, ControllerManager: &s,
		Federation: []localfed.Option{localfed.WithMemberNames(names...), localfed.WithControllers(fedtest.JoinControllers...)}})
	bed := &schedBed{Federation: fb.Fed, host: fb.Host, members: fb.Members, cm: fb.CM, probes: quickProbes}
	for _, m := range schedMembers {
		createNode(t, bed.members[m.name], "node-1", m.cpu)
		fb.Join(t, fb.Fed.Member(m.name), "--region", m.region)
	}
	enableDeploymentsIn(t, bed.host)
	return bed
}

// createNode creates a Ready Node offering cpu CPUs, 64Gi and 110 pods.
func createNode(t *testing.T, c client.Client, name, cpu string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(t.Context(), node); err != nil {
		t.Fatalf("creating Node %s: %v", name, err)
	}
	node.Status = corev1.NodeStatus{
		Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
	}
	if err := c.Status().Update(t.Context(), node); err != nil {
		t.Fatalf("writing the status of Node %s: %v", name, err)
	}
}

// workload is a FederatedDeployment whose pods each request cpu; spec is
// YAML added under spec (placement).
func workload(t *testing.T, namespace, name string, replicas int, cpu, spec string) *unstructured.Unstructured {
	t.Helper()
	return decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      replicas: %[3]d
      selector: {matchLabels: {app: %[1]s}}
      template:
        metadata: {labels: {app: %[1]s}}
        spec: {containers: [{name: web, image: "nginx:1.27", resources: {requests: {cpu: "%[4]s"}}}]}
%[5]s
`, name, namespace, replicas, cpu, spec))
}

// preference is a ReplicaSchedulingPreference of the FederatedDeployment
// name; clusters is YAML of spec.clusters' entries, indented by four.
func preference(t *testing.T, namespace, name string, total int, rebalance bool, clusters string) *unstructured.Unstructured {
	t.Helper()
	return decode(t, fmt.Sprintf(`
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  targetKind: FederatedDeployment
  totalReplicas: %[3]d
  rebalance: %[4]t
  clusters:
%[5]s
`, name, namespace, total, rebalance, clusters))
}

// waitForDecision waits until the CPV's spec.clusters is want (cluster →
// replicas, -1 for "the template's"), and returns the CPV.
func waitForDecision(t *testing.T, c client.Client, namespace, name string, want map[string]int32) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("the decision for %s/%s to be %v", namespace, name, want), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = cpvOf(ctx, c, namespace, "deployment-"+name); err != nil {
			return false, err.Error()
		}
		got := decision(cpv)
		return maps.Equal(got, want), fmt.Sprintf("%v", got)
	})
	return cpv
}

func decision(cpv *typesv1beta1.ClusterPropagatedVersion) map[string]int32 {
	got := map[string]int32{}
	for _, pc := range cpv.Spec.Clusters {
		got[string(pc.Name)] = -1
		if pc.Replicas != nil {
			got[string(pc.Name)] = *pc.Replicas
		}
	}
	return got
}

// waitForMemberReplicas waits until the member's Deployment has replicas.
func (b *schedBed) waitForMemberReplicas(t *testing.T, member, namespace, name string, replicas int32) {
	t.Helper()
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("%s's Deployment %s/%s to have %d replicas", member, namespace, name, replicas), func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := b.members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == replicas, fmt.Sprintf("replicas %v", d.Spec.Replicas)
	})
}

// waitForScheduled waits until the resource's Scheduled condition has
// status and a message containing every one of parts.
func waitForScheduled(t *testing.T, c client.Client, namespace, name string, status metav1.ConditionStatus, parts ...string) string {
	t.Helper()
	var msg string
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("Scheduled=%s of %s/%s saying %q", status, namespace, name, parts), func(ctx context.Context) (bool, string) {
		_, st, err := federatedStatus(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedScheduled)
		if cond == nil {
			return false, "no Scheduled condition"
		}
		msg = cond.Message
		ok := cond.Status == status && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(cond.Message, p) })
		return ok, fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
	return msg
}

func TestScheduling(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startSchedBed(t)
	// One after another, each a second or so: parallel subtests would wait
	// for a slot behind the package's other tests (minutes in make test)
	// while this bed idles.
	t.Run("ReplicaDivisionByWeight", bed.testWeights)
	t.Run("MinAndMaxReplicas", bed.testMinMax)
	t.Run("GeoSpreadOnePerRegion", bed.testGeoSpread)
	t.Run("CapacityRulesOutFullClusters", bed.testCapacity)
	t.Run("NothingRewrittenWhenNothingChanged", bed.testNoChurn)
	t.Run("OfflineClusterMovesReplicasOnlyWithRebalance", bed.testOffline)
}

// RSP weights 2:3 of 10 replicas give 4 and 6, in the CPV and in the
// members; the RSP says so.
func (b *schedBed) testWeights(t *testing.T) {
	ns := testNamespace(t, b.host)
	createObject(t, b.host, workload(t, ns, "web", 1, "10m", "  placement: {clusters: [{name: east-1}, {name: west-1}]}"))
	createObject(t, b.host, preference(t, ns, "web", 10, false, "    east-1: {weight: 2}\n    west-1: {weight: 3}"))
	waitForDecision(t, b.host, ns, "web", map[string]int32{"east-1": 4, "west-1": 6})
	b.waitForMemberReplicas(t, "east-1", ns, "web", 4)
	b.waitForMemberReplicas(t, "west-1", ns, "web", 6)
	poll.Eventually(t, 30*time.Second, "the RSP's Scheduled condition", func(ctx context.Context) (bool, string) {
		rsp := &unstructured.Unstructured{}
		rsp.SetAPIVersion("scheduling.kubefed.io/v1alpha1")
		rsp.SetKind("ReplicaSchedulingPreference")
		if err := b.host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, rsp); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(rsp.Object, "status", "conditions")
		s := fmt.Sprint(conds)
		return strings.Contains(s, "Divided") && strings.Contains(s, "east-1 (4 replicas), west-1 (6 replicas)"), s
	})
	// The division follows the preference: 1:1 gives 5 and 5.
	patchPreference(t, b.host, ns, "web", `{"spec":{"rebalance":true,"clusters":{"east-1":{"weight":1},"west-1":{"weight":1}}}}`)
	waitForDecision(t, b.host, ns, "web", map[string]int32{"east-1": 5, "west-1": 5})
	b.waitForMemberReplicas(t, "east-1", ns, "web", 5)
}

func patchPreference(t *testing.T, c client.Client, namespace, name, patch string) {
	t.Helper()
	rsp := &unstructured.Unstructured{}
	rsp.SetAPIVersion("scheduling.kubefed.io/v1alpha1")
	rsp.SetKind("ReplicaSchedulingPreference")
	rsp.SetNamespace(namespace)
	rsp.SetName(name)
	if err := c.Patch(t.Context(), rsp, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching ReplicaSchedulingPreference %s/%s: %v", namespace, name, err)
	}
}

// minReplicas are given first and maxReplicas caps a cluster; "*" is the
// default of the clusters not named.
func (b *schedBed) testMinMax(t *testing.T) {
	ns := testNamespace(t, b.host)
	createObject(t, b.host, workload(t, ns, "api", 1, "10m", "  placement: {clusterSelector: {}}"))
	createObject(t, b.host, preference(t, ns, "api", 12, true, `    "*": {weight: 1, maxReplicas: 2}
    west-1: {weight: 1, minReplicas: 5}`))
	// west-1 gets its 5 first; the other 7 go 1:1:1 (3, 2, 2), the
	// us-east clusters are capped at 2, and what they cannot take goes to
	// west-1.
	waitForDecision(t, b.host, ns, "api", map[string]int32{"east-1": 2, "east-2": 2, "west-1": 8})
	b.waitForMemberReplicas(t, "west-1", ns, "api", 8)
	b.waitForMemberReplicas(t, "east-2", ns, "api", 2)
}

// One cluster per region in at least two regions: one of the us-east
// clusters and west-1; the other us-east cluster is left out, and the
// condition says why. Asking for three regions cannot be met: the
// resource stays where it is and the condition says why.
func (b *schedBed) testGeoSpread(t *testing.T) {
	ns := testNamespace(t, b.host)
	createObject(t, b.host, workload(t, ns, "geo", 1, "1", `  placement:
    clusterSelector: {}
    spreadConstraints: [{spreadBy: region, minGroups: 2, maxClustersPerGroup: 1}]`))
	// east-1 has more free room than east-2: Capacity scores it higher.
	waitForDecision(t, b.host, ns, "geo", map[string]int32{"east-1": -1, "west-1": -1})
	waitForScheduled(t, b.host, ns, "geo", metav1.ConditionTrue, "east-2: GeoSpread: region us-east already has its 1 cluster")
	patchFederated(t, b.host, ns, "geo", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"spreadBy": "region", "minGroups": int64(3)}}, "spec", "placement", "spreadConstraints")
	})
	waitForScheduled(t, b.host, ns, "geo", metav1.ConditionFalse, "GeoSpread: needs clusters in at least 3 regions, found 2", "stays on east-1, west-1")
	waitForDecision(t, b.host, ns, "geo", map[string]int32{"east-1": -1, "west-1": -1})
}

// Six pods of one CPU do not fit in east-2's four CPUs, nor in west-1's
// namespace quota of two CPUs: only east-1 gets the workload, and the
// condition names the others with the numbers.
func (b *schedBed) testCapacity(t *testing.T) {
	ns := testNamespace(t, b.host)
	west := b.members["west-1"]
	createObject(t, west, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cpu"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("2")}},
	}
	createObject(t, west, quota)
	// No quota controller runs in the bed's members: write the status it
	// would.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("0")}}
	if err := west.Status().Update(t.Context(), quota); err != nil {
		t.Fatalf("writing the quota's status: %v", err)
	}
	b.waitForCapacityMeasured(t, ns)
	createObject(t, b.host, workload(t, ns, "big", 6, "1", "  placement: {clusterSelector: {}}"))
	waitForDecision(t, b.host, ns, "big", map[string]int32{"east-1": -1})
	waitForScheduled(t, b.host, ns, "big", metav1.ConditionTrue,
		"east-2: Capacity: needs 6 cpu, 4 free",
		"west-1: Capacity: needs 6 cpu, 2 left in the namespace's ResourceQuota")
	err := b.members["east-2"].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "big"}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("east-2 is full, yet reading its Deployment gives %v", err)
	}
	// The Event is recorded a moment after the decision is written.
	poll.Eventually(t, 30*time.Second, "a Scheduled Event explaining the decision for big", func(ctx context.Context) (bool, string) {
		events := &corev1.EventList{}
		if err := b.host.List(ctx, events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.Reason == typesv1beta1.ReasonScheduled && e.InvolvedObject.Name == "big" && strings.Contains(e.Message, "east-2: Capacity")
		}), fmt.Sprint(events.Items)
	})
}

// Once scheduled, a change that changes no decision (a Node's allocatable
// CPU, which makes the scheduler look at every resource again) writes nothing: not
// the CPVs, not the federated resources, not the members.
func (b *schedBed) testNoChurn(t *testing.T) {
	ns := testNamespace(t, b.host)
	createObject(t, b.host, workload(t, ns, "steady", 1, "10m", "  placement: {clusters: [{name: east-1}, {name: west-1}]}"))
	createObject(t, b.host, preference(t, ns, "steady", 5, false, "    east-1: {weight: 2}\n    west-1: {weight: 3}"))
	waitForDecision(t, b.host, ns, "steady", map[string]int32{"east-1": 2, "west-1": 3})
	b.waitForMemberReplicas(t, "west-1", ns, "steady", 3)
	waitForScheduled(t, b.host, ns, "steady", metav1.ConditionTrue)
	before := b.stableSnapshot(t, ns)
	decisions, _, err := b.cm.Sum(t.Context(), "fedwarden_scheduling_duration_seconds_count")
	if err != nil {
		t.Fatal(err)
	}
	// A capacity change (east-2's Node offers one more CPU, still too few
	// for the other tests' big workload): every resource is scheduled
	// again.
	node := &corev1.Node{}
	if err := b.members["east-2"].Get(t.Context(), types.NamespacedName{Name: "node-1"}, node); err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse("5")
	if err := b.members["east-2"].Status().Update(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 30*time.Second, "the resources to be scheduled again", func(ctx context.Context) (bool, string) {
		n, _, err := b.cm.Sum(ctx, "fedwarden_scheduling_duration_seconds_count")
		return err == nil && n > decisions, fmt.Sprintf("%v decisions (before: %v), %v", n, decisions, err)
	})
	time.Sleep(3 * time.Second) // writes, if any, would follow the decision at once
	if after := b.snapshot(t, ns); !maps.Equal(before, after) {
		t.Errorf("objects were written though no decision changed:\nbefore %v\nafter  %v", before, after)
	}
}

// stableSnapshot waits until the snapshots have not changed for steadyFor,
// over at least three polls (one unchanged pair of polls, 200 ms apart, can
// fall between a write and the next), and returns it.
func (b *schedBed) stableSnapshot(t *testing.T, namespace string) map[string]string {
	t.Helper()
	var (
		last  map[string]string
		since time.Time
		polls int
	)
	poll.Eventually(t, time.Minute, fmt.Sprintf("the namespace's objects to stop changing for %s", steadyFor), func(context.Context) (bool, string) {
		now := b.snapshot(t, namespace)
		if last == nil || !maps.Equal(last, now) {
			last, since, polls = now, time.Now(), 0
		}
		polls++
		return polls >= 3 && time.Since(since) >= steadyFor, fmt.Sprint(now)
	})
	return last
}

// snapshot returns the resourceVersions of the namespace's federated
// resource, CPV and RSP on the host, and its Deployments in the members.
func (b *schedBed) snapshot(t *testing.T, namespace string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kind := range []string{"FederatedDeployment", "ClusterPropagatedVersion"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("types.kubefed.io/v1beta1")
		list.SetKind(kind + "List")
		if err := b.host.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		for _, item := range list.Items {
			out["host/"+kind+"/"+item.GetName()] = item.GetResourceVersion()
		}
	}
	for name, c := range b.members {
		list := &appsv1.DeploymentList{}
		if err := c.List(t.Context(), list, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		for _, d := range list.Items {
			out[name+"/"+d.Name] = d.ResourceVersion
		}
	}
	return out
}

// waitForCapacityMeasured waits until the controller has measured the
// members' room for pods of namespace, Nodes and quota: until a canary
// workload like testCapacity's gets east-1 alone in its first decision. A
// cluster not measured yet is never ruled out (the Capacity plugin), and a
// copy placed there is then kept (docs/scheduling.md, "Copies are kept"):
// a canary placed too early is deleted and created again.
func (b *schedBed) waitForCapacityMeasured(t *testing.T, ns string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 1; ; attempt++ {
		// A new name each time: a deleted canary's CPV, until it is
		// collected, would make the next one look placed already.
		name := fmt.Sprintf("canary-%d", attempt)
		canary := workload(t, ns, name, 6, "1", "  placement: {clusterSelector: {}}")
		if err := b.host.Create(t.Context(), canary); err != nil {
			t.Fatalf("creating the canary: %v", err)
		}
		var got map[string]int32
		poll.Eventually(t, 45*time.Second, "a first decision for the canary", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, b.host, ns, "deployment-"+name)
			if err != nil {
				return false, err.Error()
			}
			got = decision(cpv)
			return len(got) > 0, fmt.Sprint(got)
		})
		if err := b.host.Delete(t.Context(), canary); err != nil {
			t.Fatalf("deleting the canary: %v", err)
		}
		poll.Eventually(t, time.Minute, "the canary to be gone", func(ctx context.Context) (bool, string) {
			err := b.host.Get(ctx, client.ObjectKeyFromObject(canary), canary)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		if maps.Equal(got, map[string]int32{"east-1": -1}) {
			return
		}
		t.Logf("capacity not measured yet (attempt %d): the canary went to %v", attempt, got)
		if time.Now().After(deadline) {
			t.Fatalf("the members' capacity was not measured within 2m: the canary still went to %v", got)
		}
	}
}

// A cluster that goes offline keeps its replicas unless the preference
// allows rebalancing; with rebalance its replicas move to the Ready
// clusters, and come back when it does.
func (b *schedBed) testOffline(t *testing.T) {
	ns := testNamespace(t, b.host)
	for _, rebalance := range []bool{false, true} {
		name := fmt.Sprintf("rebalance-%t", rebalance)
		createObject(t, b.host, workload(t, ns, name, 1, "10m", "  placement: {clusters: [{name: east-1}, {name: west-1}]}"))
		createObject(t, b.host, preference(t, ns, name, 10, rebalance, "    east-1: {weight: 2}\n    west-1: {weight: 3}"))
		waitForDecision(t, b.host, ns, name, map[string]int32{"east-1": 4, "west-1": 6})
		b.waitForMemberReplicas(t, "east-1", ns, name, 4)
	}
	if err := b.Member("west-1").Kill(); err != nil {
		t.Fatalf("stopping west-1: %v", err)
	}
	waitForCondition(t, b.host, "west-1", corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, b.probes.failedWithin())
	waitForDecision(t, b.host, ns, "rebalance-true", map[string]int32{"east-1": 10, "west-1": 0})
	b.waitForMemberReplicas(t, "east-1", ns, "rebalance-true", 10)
	cpv := waitForDecision(t, b.host, ns, "rebalance-false", map[string]int32{"east-1": 4, "west-1": 6})
	b.waitForMemberReplicas(t, "east-1", ns, "rebalance-false", 4)
	if err := fedtest.RestartCluster(t, b.Member("west-1")); err != nil {
		t.Fatalf("restarting west-1: %v", err)
	}
	waitForCondition(t, b.host, "west-1", corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, b.probes.probesWithin(1))
	waitForDecision(t, b.host, ns, "rebalance-true", map[string]int32{"east-1": 4, "west-1": 6})
	b.waitForMemberReplicas(t, "west-1", ns, "rebalance-true", 6)
	b.waitForMemberReplicas(t, "east-1", ns, "rebalance-true", 4)
	if after := waitForDecision(t, b.host, ns, "rebalance-false", map[string]int32{"east-1": 4, "west-1": 6}); after.Generation != cpv.Generation {
		t.Errorf("the decision without rebalance was rewritten while west-1 was away: generation %d → %d", cpv.Generation, after.Generation)
	}
}
