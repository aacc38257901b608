package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// Scheduler plugins are optimisations: when the state of the clusters
// changes (a node drained and gone NotReady, a cluster down, a spread
// decided again), they never delete a copy; the Scheduled condition and an
// Event say why it is kept. A user's change still removes one. Each step
// shows a copy survives by waiting for the controller to say it kept it,
// then for one more full sync, and reading the copy with its UID.
func TestStateDrivenPluginsNeverDeleteACopy(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startSchedBed(t)
	ns := testNamespace(t, bed.host)

	// A FederatedDeployment of 2 replicas at 1 CPU each runs in east-1 and
	// west-1; west-1's only Node is cordoned and turns NotReady.
	createObject(t, bed.host, workload(t, ns, "web", 2, "1", "  placement: {clusters: [{name: east-1}, {name: west-1}]}"))
	waitForDecision(t, bed.host, ns, "web", map[string]int32{"east-1": -1, "west-1": -1})
	uid := bed.copyUID(t, "west-1", ns, "web")
	bed.drainNode(t, "west-1", "node-1")
	waitForKept(t, bed.host, ns, "web", "kept west-1, which holds a copy, despite Capacity: needs 2 cpu, none free")
	bed.resyncAndWait(t, ns, "web")
	bed.checkCopy(t, "west-1", ns, "web", uid)
	waitForDecision(t, bed.host, ns, "web", map[string]int32{"east-1": -1, "west-1": -1})

	// The user's change of the placement removes it.
	patchFederated(t, bed.host, ns, "web", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"name": "east-1"}}, "spec", "placement", "clusters")
	})
	bed.waitForNoCopy(t, "west-1", ns, "web")
	waitForDecision(t, bed.host, ns, "web", map[string]int32{"east-1": -1})

	// One cluster per region among the two us-east clusters: east-1, the
	// roomier. east-1 goes down: east-2 gets a copy, and east-1 keeps its.
	createObject(t, bed.host, workload(t, ns, "geo", 1, "1", `  placement:
    clusters: [{name: east-1}, {name: east-2}]
    spreadConstraints: [{spreadBy: region, maxClustersPerGroup: 1}]`))
	waitForDecision(t, bed.host, ns, "geo", map[string]int32{"east-1": -1})
	geoUID := bed.copyUID(t, "east-1", ns, "geo")
	if err := bed.Member("east-1").Kill(); err != nil {
		t.Fatalf("stopping east-1: %v", err)
	}
	waitForCondition(t, bed.host, "east-1", corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, bed.probes.failedWithin())
	waitForDecision(t, bed.host, ns, "geo", map[string]int32{"east-1": -1, "east-2": -1})
	waitForKept(t, bed.host, ns, "geo", "kept east-1, which holds a copy, despite GeoSpread: region us-east already has its 1 cluster")

	east2UID := bed.copyUID(t, "east-2", ns, "geo")

	// east-1 is back: the spread is decided again, from the same
	// constraints, and neither copy goes (which of the two the spread
	// prefers depends on when east-1's capacity is measured again).
	if err := fedtest.RestartCluster(t, bed.Member("east-1")); err != nil {
		t.Fatalf("restarting east-1: %v", err)
	}
	waitForCondition(t, bed.host, "east-1", corev1beta1.ClusterReady, metav1.ConditionTrue, corev1beta1.ReasonClusterReady, bed.probes.probesWithin(1))
	bed.resyncAndWait(t, ns, "geo")
	waitForKept(t, bed.host, ns, "geo", "which holds a copy, despite GeoSpread: region us-east already has its 1 cluster")
	bed.checkCopy(t, "east-1", ns, "geo", geoUID)
	bed.checkCopy(t, "east-2", ns, "geo", east2UID)
	waitForDecision(t, bed.host, ns, "geo", map[string]int32{"east-1": -1, "east-2": -1})

	// The user's change of the spread constraints removes the copy they
	// now leave out, and only that one.
	patchFederated(t, bed.host, ns, "geo", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"spreadBy": "region", "maxGroups": int64(1), "maxClustersPerGroup": int64(1)}}, "spec", "placement", "spreadConstraints")
	})
	var kept string
	poll.Eventually(t, 45*time.Second, "the decision for geo to name one cluster", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, bed.host, ns, "deployment-geo")
		if err != nil {
			return false, err.Error()
		}
		d := decision(cpv)
		for name := range d {
			kept = name
		}
		return len(d) == 1, fmt.Sprint(d)
	})
	gone, keptUID := "east-2", geoUID
	if kept == "east-2" {
		gone, keptUID = "east-1", east2UID
	}
	bed.waitForNoCopy(t, gone, ns, "geo")
	bed.checkCopy(t, kept, ns, "geo", keptUID)
}

// drainNode cordons a member's Node and marks it NotReady, as a drain and a
// kubelet that stops reporting would.
func (b *schedBed) drainNode(t *testing.T, member, name string) {
	t.Helper()
	c := b.members[member]
	node := &corev1.Node{}
	if err := c.Get(t.Context(), types.NamespacedName{Name: name}, node); err != nil {
		t.Fatal(err)
	}
	node.Spec.Unschedulable = true
	if err := c.Update(t.Context(), node); err != nil {
		t.Fatalf("cordoning Node %s in %s: %v", name, member, err)
	}
	for i, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			node.Status.Conditions[i].Status, node.Status.Conditions[i].Reason = corev1.ConditionFalse, "KubeletNotReady"
			node.Status.Conditions[i].LastTransitionTime = metav1.Now()
		}
	}
	if err := c.Status().Update(t.Context(), node); err != nil {
		t.Fatalf("marking Node %s in %s NotReady: %v", name, member, err)
	}
}

// waitForKept waits until the resource's Scheduled condition says, with
// reason CopiesKept, that it keeps a copy, and an Event says so too.
func waitForKept(t *testing.T, c client.Client, namespace, name, why string) {
	t.Helper()
	waitForScheduled(t, c, namespace, name, metav1.ConditionTrue, why)
	poll.Eventually(t, 30*time.Second, "the Scheduled condition's reason to be "+typesv1beta1.ReasonCopiesKept, func(ctx context.Context) (bool, string) {
		_, st, err := federatedStatus(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedScheduled)
		return cond != nil && cond.Reason == typesv1beta1.ReasonCopiesKept, fmt.Sprint(cond)
	})
	waitForEvent(t, c, namespace, name, typesv1beta1.ReasonCopiesKept+": ", why)
}

// resyncAndWait asks for a full sync of the resource (kubefed.io/resync)
// and waits until its CPV says it was done: whatever that sync would
// delete is gone by then.
func (b *schedBed) resyncAndWait(t *testing.T, namespace, name string) {
	t.Helper()
	value := fmt.Sprintf("keep-%d", time.Now().UnixNano())
	patchFederated(t, b.host, namespace, name, func(obj *unstructured.Unstructured) {
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[typesv1beta1.AnnotationResync] = value
		obj.SetAnnotations(annotations)
	})
	poll.Eventually(t, 45*time.Second, "the resync of "+name+" to be done", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, b.host, namespace, "deployment-"+name)
		if err != nil {
			return false, err.Error()
		}
		return cpv.Status.Resync == value, "resync " + cpv.Status.Resync
	})
}

// copyUID waits for the member's Deployment and returns its UID.
func (b *schedBed) copyUID(t *testing.T, member, namespace, name string) types.UID {
	t.Helper()
	var uid types.UID
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("%s's Deployment %s/%s", member, namespace, name), func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := b.members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		uid = d.UID
		return true, ""
	})
	return uid
}

// checkCopy fails unless the member still has the Deployment of that UID,
// not being deleted.
func (b *schedBed) checkCopy(t *testing.T, member, namespace, name string, uid types.UID) {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.members[member].Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("%s's copy of %s/%s: %v", member, namespace, name, err)
	}
	if d.UID != uid || !d.DeletionTimestamp.IsZero() {
		t.Fatalf("%s's copy of %s/%s was replaced or is being deleted: UID %s (was %s), deletionTimestamp %v", member, namespace, name, d.UID, uid, d.DeletionTimestamp)
	}
}

// waitForNoCopy waits until the member has no Deployment of that name.
func (b *schedBed) waitForNoCopy(t *testing.T, member, namespace, name string) {
	t.Helper()
	poll.Eventually(t, 45*time.Second, fmt.Sprintf("%s's Deployment %s/%s to be deleted", member, namespace, name), func(ctx context.Context) (bool, string) {
		err := b.members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &appsv1.Deployment{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}
