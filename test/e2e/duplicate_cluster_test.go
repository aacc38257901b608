package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// Two FederatedClusters of one API server would write the same objects
// and fight without end. A cluster joined as dup-first cannot be joined
// again as dup-second: `fedwarden join` refuses and writes nothing. A
// second FederatedCluster made by hand (the first's token, a Secret bound
// to it) is not Ready, reason DuplicateCluster naming dup-first, with a
// Warning Event; dup-first stays Ready. A Deployment placed on both, with
// an override for dup-second only, is written once, through dup-first:
// the scheduler leaves the cluster that is not Ready out and the
// resource's status says why, and the copy keeps dup-first's replicas
// through three resyncs. Dropping dup-second from the
// placement deletes nothing; deleting the resource completes (dup-second
// does not hold its finalizer) and removes the copy through dup-first.
// Once dup-second is deleted, dup-first is still Ready.
func TestASecondNameOfAJoinedClusterIsRefusedAndWritesNothing(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	const first, second = "dup-first", "dup-second"
	m := joinOwnMember(t, first)
	host := hostClient(t)
	member := newClient(t, m.Config)
	kubeSystem := &corev1.Namespace{}
	if err := member.Get(t.Context(), types.NamespacedName{Name: metav1.NamespaceSystem}, kubeSystem); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, cm.probes.probesWithin(2), first+"'s status.clusterID", func(ctx context.Context) (bool, string) {
		fc := &corev1beta1.FederatedCluster{}
		if err := host.Get(ctx, types.NamespacedName{Name: first}, fc); err != nil {
			return false, err.Error()
		}
		return fc.Status.ClusterID == string(kubeSystem.UID), fmt.Sprintf("clusterID %q, want the member's kube-system UID %s", fc.Status.ClusterID, kubeSystem.UID)
	})

	t.Run("join refuses a second name", func(t *testing.T) {
		r := runFedwarden(t, joinArgs(fed, m, second)...)
		if r.code != 1 || !strings.Contains(r.stderr, "already joined as "+first) {
			t.Fatalf("joining %s again as %s: want exit code 1 and a message naming %s, got:\n%s", first, second, first, r)
		}
		if err := host.Get(t.Context(), types.NamespacedName{Name: second}, &corev1beta1.FederatedCluster{}); !apierrors.IsNotFound(err) {
			t.Errorf("FederatedCluster %s after the refused join: %v, want NotFound", second, err)
		}
		sas := &corev1.ServiceAccountList{}
		if err := member.List(t.Context(), sas, client.InNamespace(fedNamespace)); err != nil {
			t.Fatal(err)
		}
		for _, sa := range sas.Items {
			if strings.Contains(sa.Name, second) {
				t.Errorf("the refused join wrote ServiceAccount %s in the member", sa.Name)
			}
		}
	})

	// A second FederatedCluster by hand, with the first's credentials.
	creds := &corev1.Secret{}
	if err := host.Get(t.Context(), types.NamespacedName{Namespace: fedNamespace, Name: "fedwarden-" + first + "-credentials"}, creds); err != nil {
		t.Fatal(err)
	}
	createCluster(t, host, second, m.Endpoint, m.CAData, map[string][]byte{corev1beta1.SecretTokenKey: creds.Data[corev1beta1.SecretTokenKey]})
	got := waitForCondition(t, host, second, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonDuplicateCluster, cm.probes.probesWithin(2))
	if !strings.Contains(got.message, first) || !strings.Contains(got.message, string(kubeSystem.UID)) {
		t.Errorf("Ready message %q does not name %s and the cluster ID", got.message, first)
	}
	poll.Eventually(t, loadSlack, "a Warning Event DuplicateCluster on "+second, func(ctx context.Context) (bool, string) {
		events := &corev1.EventList{}
		if err := host.List(ctx, events, client.InNamespace(metav1.NamespaceDefault), client.MatchingFieldsSelector{
			Selector: fields.OneTermEqualSelector("involvedObject.name", second),
		}); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == corev1beta1.ReasonDuplicateCluster {
				return true, ""
			}
			seen = append(seen, e.Type+"/"+e.Reason)
		}
		return false, fmt.Sprint(seen)
	})
	if ready, err := clusterCondition(t.Context(), host, first, corev1beta1.ClusterReady); err != nil || ready.status != metav1.ConditionTrue {
		t.Errorf("%s: Ready = %+v (%v), want True", first, ready, err)
	}

	ns := testNamespace(t, host)
	overrides := fmt.Sprintf("\n  overrides: [{clusterName: %s, clusterOverrides: [{path: /spec/replicas, value: 3}]}]", second)
	createObject(t, host, newFederatedDeployment(t, ns, "web", 1, placedOn(first, second)+overrides))
	// The scheduler leaves a cluster that is not Ready out, and says why.
	poll.Eventually(t, loadSlack+30*time.Second, "the CPV to hold "+first+" InSync, and the resource's status to say why "+second+" holds nothing", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "deployment-web")
		if err != nil {
			return false, err.Error()
		}
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("types.kubefed.io/v1beta1")
		obj.SetKind("FederatedDeployment")
		if err := host.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, obj); err != nil {
			return false, err.Error()
		}
		status := fmt.Sprint(obj.Object["status"])
		cvs := cpv.Status.ClusterVersions
		return len(cvs) == 1 && string(cvs[0].ClusterName) == first && cvs[0].State == typesv1beta1.InSync &&
				strings.Contains(status, second) && strings.Contains(status, corev1beta1.ReasonDuplicateCluster),
			fmt.Sprintf("CPV %+v; status %s", cvs, status)
	})
	before := copyStateOf(t, member, first, ns, "web")
	waitForResyncs(t)
	d := &appsv1.Deployment{}
	if err := member.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	if after := copyStateOf(t, member, first, ns, "web"); after != before || d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("the copy was written again through %s: %+v (replicas %v), was %+v", second, after, d.Spec.Replicas, before)
	}

	patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"name": first}}, "spec", "placement", "clusters")
	})
	poll.Eventually(t, loadSlack+30*time.Second, "the CPV to hold "+first+" alone, InSync", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, ns, "deployment-web")
		if err != nil {
			return false, err.Error()
		}
		cvs := cpv.Status.ClusterVersions
		return len(cvs) == 1 && string(cvs[0].ClusterName) == first && cvs[0].State == typesv1beta1.InSync, fmt.Sprintf("%+v", cvs)
	})
	if after := copyStateOf(t, member, first, ns, "web"); after.uid != before.uid {
		t.Errorf("dropping %s from the placement replaced the copy: UID %s, was %s", second, after.uid, before.uid)
	}
	fedDeploy := &unstructured.Unstructured{}
	fedDeploy.SetAPIVersion("types.kubefed.io/v1beta1")
	fedDeploy.SetKind("FederatedDeployment")
	fedDeploy.SetNamespace(ns)
	fedDeploy.SetName("web")
	if err := host.Delete(t.Context(), fedDeploy); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, loadSlack+30*time.Second, "the FederatedDeployment and its copy to be gone", func(ctx context.Context) (bool, string) {
		herr := host.Get(ctx, client.ObjectKeyFromObject(fedDeploy), fedDeploy.DeepCopy())
		merr := member.Get(ctx, types.NamespacedName{Namespace: ns, Name: "web"}, &appsv1.Deployment{})
		return apierrors.IsNotFound(herr) && apierrors.IsNotFound(merr), fmt.Sprintf("host: %v; member: %v", herr, merr)
	})

	if err := host.Delete(t.Context(), &corev1beta1.FederatedCluster{ObjectMeta: metav1.ObjectMeta{Name: second}}); err != nil {
		t.Fatal(err)
	}
	waitForResyncs(t)
	if ready, err := clusterCondition(t.Context(), host, first, corev1beta1.ClusterReady); err != nil || ready.status != metav1.ConditionTrue {
		t.Errorf("%s after %s left: Ready = %+v (%v), want True", first, second, ready, err)
	}
}
