package e2e

import (
	"context"
	"encoding/json"
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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// newFederatedDeployment returns a FederatedDeployment of nginx:1.27 with
// replicas replicas; spec is YAML appended under its spec, indented by two
// spaces (placement, overrides).
func newFederatedDeployment(t *testing.T, namespace, name string, replicas int, spec string) *unstructured.Unstructured {
	t.Helper()
	return decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    metadata: {labels: {app: %[1]s}}
    spec:
      replicas: %[3]d
      selector: {matchLabels: {app: %[1]s}}
      template:
        metadata: {labels: {app: %[1]s}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
%[4]s
`, name, namespace, replicas, spec))
}

// placedOn is the placement YAML naming clusters.
func placedOn(clusters ...string) string {
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		names = append(names, "{name: "+c+"}")
	}
	return "  placement: {clusters: [" + strings.Join(names, ", ") + "]}"
}

// createObject creates obj, failing the test on error.
func createObject(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(t.Context(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
}

// patchFederated changes a federated resource as `kubectl patch --type
// merge` would: without a resourceVersion, so that the controller's status
// writes cannot make it conflict.
func patchFederated(t *testing.T, c client.Client, namespace, name string, change func(obj *unstructured.Unstructured)) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedDeployment")
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopy()
	change(obj)
	if err := c.Patch(t.Context(), obj, client.MergeFrom(before)); err != nil {
		t.Fatalf("patching FederatedDeployment %s/%s: %v", namespace, name, err)
	}
}

// federatedStatus reads a FederatedDeployment and its status.
func federatedStatus(ctx context.Context, c client.Client, namespace, name string) (*unstructured.Unstructured, typesv1beta1.FederatedStatus, error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedDeployment")
	var st typesv1beta1.FederatedStatus
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, st, err
	}
	if raw, found, _ := unstructured.NestedMap(obj.Object, "status"); found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			return nil, st, err
		}
	}
	return obj, st, nil
}

// clusterOutcome is one entry of a federated resource's status.clusters as
// a user reads it.
type clusterOutcome struct{ reason, message string }

// waitForFederatedStatus waits until the FederatedDeployment's status
// describes its current generation, its Propagated condition has status
// and reason, and status.clusters has exactly the clusters of want with
// their reasons and, when given, a message containing want's message.
func waitForFederatedStatus(t *testing.T, c client.Client, namespace, name string, status metav1.ConditionStatus, reason string, want map[string]clusterOutcome) {
	t.Helper()
	poll.Eventually(t, settleWithin, fmt.Sprintf("FederatedDeployment %s/%s: Propagated=%s (%s) with clusters %v", namespace, name, status, reason, want), func(ctx context.Context) (bool, string) {
		obj, st, err := federatedStatus(ctx, c, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("generation %d, status %+v", obj.GetGeneration(), st)
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedPropagated)
		if st.ObservedGeneration != obj.GetGeneration() || cond == nil || cond.Status != status || cond.Reason != reason ||
			st.ClusterCount == nil || int(*st.ClusterCount) != len(want) || len(st.Clusters) != len(want) {
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

// waitForCPVState waits until the CPV has an entry per cluster of want,
// in the state want gives it, and returns the CPV.
func waitForCPVState(t *testing.T, c client.Client, namespace, name string, want map[string]typesv1beta1.DriftState) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	poll.Eventually(t, settleWithin, fmt.Sprintf("CPV %s/%s with states %v", namespace, name, want), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = cpvOf(ctx, c, namespace, name); err != nil {
			return false, err.Error()
		}
		if len(cpv.Status.ClusterVersions) != len(want) {
			return false, fmt.Sprintf("%+v", cpv.Status)
		}
		for _, cv := range cpv.Status.ClusterVersions {
			if want[string(cv.ClusterName)] != cv.State {
				return false, fmt.Sprintf("%+v", cpv.Status)
			}
		}
		return true, ""
	})
	return cpv
}

// memberClient returns a client of member i of the shared test bed.
func memberClient(t *testing.T, i int) client.Client {
	t.Helper()
	return newClient(t, fed.Members[i].Config)
}

// waitForAbsent waits until obj is gone from the cluster c talks to.
func waitForAbsent(t *testing.T, c client.Client, obj client.Object, where string, timeout time.Duration) {
	t.Helper()
	poll.Eventually(t, timeout, fmt.Sprintf("%T %s to be gone from %s", obj, client.ObjectKeyFromObject(obj), where), func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("still there, deletionTimestamp %v, finalizers %v", obj.GetDeletionTimestamp(), obj.GetFinalizers())
	})
}

// settled tells whether a member's deployment controller is done with a
// Deployment of zero replicas, so that nothing but Fedwarden writes it
// from then on.
func settled(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration != d.Generation {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason == "NewReplicaSetAvailable"
		}
	}
	return false
}

// waitForSettled waits until the member's deployment controller is done
// with Deployment namespace/name, and returns it.
func waitForSettled(t *testing.T, c client.Client, where, namespace, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	poll.Eventually(t, settleWithin, fmt.Sprintf("Deployment %s/%s in %s to settle", namespace, name, where), func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		return settled(d), fmt.Sprintf("generation %d, status %+v", d.Generation, d.Status)
	})
	return d
}

func cpvClusterNames(cpv *typesv1beta1.ClusterPropagatedVersion) []string {
	var names []string
	for _, c := range cpv.Spec.Clusters {
		names = append(names, string(c.Name))
	}
	return names
}

// Placement picks clusters by name or by their labels (the shared test bed
// labels member-1 region-1 and member-2 region-2, both tier=gold); an empty
// list of names picks none, even beside a selector.
func TestPlacementSelectsClusters(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	tests := []struct {
		name      string
		placement string
		want      []string
	}{
		{"region-2", "  placement: {clusterSelector: {matchLabels: {topology.kubernetes.io/region: region-2}}}", []string{m2}},
		{"gold", "  placement: {clusterSelector: {matchLabels: {tier: gold}}}", []string{m1, m2}},
		{"gold-not-region-2", `  placement:
    clusterSelector:
      matchLabels: {tier: gold}
      matchExpressions: [{key: topology.kubernetes.io/region, operator: NotIn, values: [region-2]}]`, []string{m1}},
		{"by-name", placedOn(m2), []string{m2}},
		{"empty-list", "  placement: {clusters: [], clusterSelector: {matchLabels: {tier: gold}}}", nil},
		{"no-placement", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			createObject(t, host, newFederatedDeployment(t, ns, tt.name, 0, tt.placement))
			cpv := waitForCPV(t, host, ns, "deployment-"+tt.name, "1", "1", tt.want...)
			if got := cpvClusterNames(cpv); !slices.Equal(got, tt.want) {
				t.Errorf("CPV spec.clusters = %v, want %v", got, tt.want)
			}
			if got := *cpv.Status.ClusterCount; int(got) != len(tt.want) {
				t.Errorf("CPV clusterCount = %d, want %d", got, len(tt.want))
			}
			reason, outcomes := typesv1beta1.ReasonPropagated, map[string]clusterOutcome{}
			for _, name := range tt.want {
				outcomes[name] = clusterOutcome{reason: typesv1beta1.ClusterPropagated}
			}
			if len(tt.want) == 0 {
				reason = typesv1beta1.ReasonNoClusters
			}
			waitForFederatedStatus(t, host, ns, tt.name, metav1.ConditionTrue, reason, outcomes)
			for i, m := range fed.Members {
				err := memberClient(t, i).Get(t.Context(), types.NamespacedName{Namespace: ns, Name: tt.name}, &appsv1.Deployment{})
				switch placed := slices.Contains(tt.want, m.Name); {
				case placed && err != nil:
					t.Errorf("%s is placed but has no Deployment: %v", m.Name, err)
				case !placed && !apierrors.IsNotFound(err):
					t.Errorf("%s is not placed, yet reading its Deployment gives %v", m.Name, err)
				}
			}
		})
	}
}

// A cluster dropped from the placement loses its copy and its CPV entry;
// the cluster that stays keeps its copy untouched.
func TestPlacementDropRemovesCopy(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	member1, member2 := memberClient(t, 0), memberClient(t, 1)
	kept := waitForSettled(t, member2, m2, ns, "web")

	patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"name": m2}}, "spec", "placement", "clusters")
	})
	cpv := waitForCPV(t, host, ns, "deployment-web", "1", "1", m2)
	if got := cpvClusterNames(cpv); !slices.Equal(got, []string{m2}) {
		t.Errorf("CPV spec.clusters = %v, want [%s]", got, m2)
	}
	waitForAbsent(t, member1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, m1, 30*time.Second)
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{m2: {reason: typesv1beta1.ClusterPropagated}})
	after := &appsv1.Deployment{}
	if err := member2.Get(t.Context(), client.ObjectKeyFromObject(kept), after); err != nil {
		t.Fatalf("%s lost its Deployment: %v", m2, err)
	}
	if after.ResourceVersion != kept.ResourceVersion {
		t.Errorf("%s's Deployment was written when %s left the placement: resourceVersion %s → %s", m2, m1, kept.ResourceVersion, after.ResourceVersion)
	}
}

// Deleting a FederatedDeployment deletes its copies in every member before
// it goes (the finalizer holds it), and its CPV goes with it.
func TestDeletionDeletesCopies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	fd := newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2))
	createObject(t, host, fd)
	cpv := waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	if err := host.Get(t.Context(), client.ObjectKeyFromObject(fd), fd); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fd.GetFinalizers(), typesv1beta1.FinalizerSync) {
		t.Errorf("FederatedDeployment finalizers = %v, want %s", fd.GetFinalizers(), typesv1beta1.FinalizerSync)
	}
	if owner := metav1.GetControllerOf(cpv); owner == nil || owner.UID != fd.GetUID() || owner.Kind != "FederatedDeployment" {
		t.Errorf("CPV controller = %+v, want the FederatedDeployment (uid %s)", owner, fd.GetUID())
	}

	if err := host.Delete(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	for i, m := range fed.Members {
		waitForAbsent(t, memberClient(t, i), &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, m.Name, 30*time.Second)
	}
	waitForAbsent(t, host, fd, "the host", 30*time.Second)
	// The host's garbage collector deletes the CPV once its owner is gone.
	waitForAbsent(t, host, &typesv1beta1.ClusterPropagatedVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployment-web"}}, "the host", 60*time.Second)
}

// With kubefed.io/orphan: "true", deleting a FederatedDeployment leaves its
// copies in the members as they are.
func TestOrphanKeepsCopies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	fd := newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2))
	fd.SetAnnotations(map[string]string{typesv1beta1.AnnotationOrphan: "true"})
	createObject(t, host, fd)
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	copies := make([]*appsv1.Deployment, len(fed.Members))
	for i, m := range fed.Members {
		copies[i] = waitForSettled(t, memberClient(t, i), m.Name, ns, "web")
	}

	if err := host.Delete(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	waitForAbsent(t, host, fd, "the host", 30*time.Second)
	for i, m := range fed.Members {
		got := &appsv1.Deployment{}
		if err := memberClient(t, i).Get(t.Context(), client.ObjectKeyFromObject(copies[i]), got); err != nil {
			t.Errorf("%s: the orphaned Deployment is gone: %v", m.Name, err)
			continue
		}
		if got.ResourceVersion != copies[i].ResourceVersion || got.DeletionTimestamp != nil {
			t.Errorf("%s: the orphaned Deployment was written (resourceVersion %s → %s, deletionTimestamp %v)", m.Name, copies[i].ResourceVersion, got.ResourceVersion, got.DeletionTimestamp)
		}
	}
}

// A member object of the same name that Fedwarden does not manage is left
// alone and reported, until the FederatedDeployment opts in to adopting it.
func TestAdoption(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	member1 := memberClient(t, 0)
	createObject(t, member1, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	labels := map[string]string{"app": "web"}
	createObject(t, member1, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(0)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:by-hand"}}},
			},
		},
	})
	handMade := waitForSettled(t, member1, m1, ns, "web")

	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)))
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterAlreadyExists, message: typesv1beta1.AnnotationConflictResolution + ": " + typesv1beta1.ConflictResolutionAdopt},
		m2: {reason: typesv1beta1.ClusterPropagated},
	})
	cpv := waitForCPVState(t, host, ns, "deployment-web", map[string]typesv1beta1.DriftState{m1: typesv1beta1.AlreadyExists, m2: typesv1beta1.InSync})
	if !meta.IsStatusConditionFalse(cpv.Status.Conditions, typesv1beta1.CPVPropagated) {
		t.Errorf("CPV Propagated is not False while %s has a Deployment it may not take: %+v", m1, cpv.Status.Conditions)
	}
	got := &appsv1.Deployment{}
	if err := member1.Get(t.Context(), client.ObjectKeyFromObject(handMade), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != handMade.ResourceVersion {
		t.Errorf("the hand-made Deployment in %s was written: resourceVersion %s → %s, labels %v, image %s",
			m1, handMade.ResourceVersion, got.ResourceVersion, got.Labels, got.Spec.Template.Spec.Containers[0].Image)
	}

	patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
		obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationConflictResolution: typesv1beta1.ConflictResolutionAdopt})
	})
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterPropagated}, m2: {reason: typesv1beta1.ClusterPropagated},
	})
	if err := member1.Get(t.Context(), client.ObjectKeyFromObject(handMade), got); err != nil {
		t.Fatal(err)
	}
	if got.UID != handMade.UID || got.Labels[typesv1beta1.LabelManaged] != "true" || got.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Errorf("%s: after adoption the Deployment has uid %s (was %s), labels %v and image %s; want the same object, managed, with the template's image",
			m1, got.UID, handMade.UID, got.Labels, got.Spec.Template.Spec.Containers[0].Image)
	}
}

// An override that does not apply to the template fails its cluster only,
// with a message naming the override; fixing it heals the cluster.
func TestBadOverridePath(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	const badPath = "/spec/template/spec/containers/5/image"
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)+`
  overrides:
  - clusterName: `+m2+`
    clusterOverrides: [{path: `+badPath+`, value: "nginx:1.28"}]`))
	wantMessage := "override 0 (replace " + badPath + ")"
	cpv := waitForCPVState(t, host, ns, "deployment-web", map[string]typesv1beta1.DriftState{m1: typesv1beta1.InSync, m2: typesv1beta1.ApplyFailed})
	for _, cv := range cpv.Status.ClusterVersions {
		if string(cv.ClusterName) == m2 && !strings.Contains(cv.Message, wantMessage) {
			t.Errorf("CPV entry of %s: message %q does not name %q", m2, cv.Message, wantMessage)
		}
	}
	cond := meta.FindStatusCondition(cpv.Status.Conditions, typesv1beta1.CPVPropagated)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason != typesv1beta1.ReasonPropagationFailed || !strings.Contains(cond.Message, m2) {
		t.Errorf("CPV Propagated = %+v, want False, %s, naming %s", cond, typesv1beta1.ReasonPropagationFailed, m2)
	}
	waitForFederatedStatus(t, host, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
		m1: {reason: typesv1beta1.ClusterPropagated},
		m2: {reason: typesv1beta1.ClusterApplyFailed, message: wantMessage},
	})
	if err := memberClient(t, 1).Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: reading the Deployment that failed to render gives %v, want NotFound", m2, err)
	}

	patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
		setNested(t, obj.Object, []any{map[string]any{"clusterName": m2, "clusterOverrides": []any{
			map[string]any{"path": "/spec/template/spec/containers/0/image", "value": "nginx:1.28"},
		}}}, "spec", "overrides")
	})
	waitForCPV(t, host, ns, "deployment-web", "1", "2", m1, m2)
	if img := memberDeployment(t, 1, ns, "web").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
		t.Errorf("%s: image = %s after the override was fixed, want nginx:1.28", m2, img)
	}
}

// A namespaced object goes to a member that lacks its namespace: the
// namespace is created there, marked as created for propagation, and only
// in the members the object is placed on.
func TestNamespaceCreatedInMember(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m2 := fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m2)))
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m2)
	created := &corev1.Namespace{}
	if err := memberClient(t, 1).Get(t.Context(), types.NamespacedName{Name: ns}, created); err != nil {
		t.Fatalf("%s: reading namespace %s: %v", m2, ns, err)
	}
	if got := created.Annotations[typesv1beta1.AnnotationCreatedNamespace]; got != "true" {
		t.Errorf("%s: namespace %s has annotations %v, want %s: \"true\"", m2, ns, created.Annotations, typesv1beta1.AnnotationCreatedNamespace)
	}
	if err := memberClient(t, 0).Get(t.Context(), types.NamespacedName{Name: ns}, &corev1.Namespace{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s, where nothing is placed: reading namespace %s gives %v, want NotFound", fed.Members[0].Name, ns, err)
	}
}

// With status collection enabled, the FederatedDeployment shows each
// member Deployment's replica counts. The members run no scheduler or
// kubelet: their pods are created but never ready.
func TestStatusCollection(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	createObject(t, host, newFederatedDeployment(t, ns, "web", 2, placedOn(m1, m2)+`
  overrides:
  - clusterName: `+m2+`
    clusterOverrides: [{path: /spec/replicas, value: 3}]`))
	want := map[string]int64{m1: 2, m2: 3}
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("remoteStatus with replicas and updatedReplicas %v", want), func(ctx context.Context) (bool, string) {
		_, st, err := federatedStatus(ctx, host, ns, "web")
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		ok := len(st.Clusters) == len(want)
		for _, cl := range st.Clusters {
			remote := map[string]int64{}
			if cl.RemoteStatus != nil {
				if err := json.Unmarshal(cl.RemoteStatus.Raw, &remote); err != nil {
					return false, fmt.Sprintf("%s: remoteStatus %s: %v", cl.Name, cl.RemoteStatus.Raw, err)
				}
			}
			n := want[string(cl.Name)]
			ok = ok && remote["replicas"] == n && remote["updatedReplicas"] == n && remote["readyReplicas"] == 0 && remote["observedGeneration"] == 1
			seen = append(seen, fmt.Sprintf("%s: %v", cl.Name, remote))
		}
		return ok, strings.Join(seen, "; ")
	})
	// The collected counts are the member's own.
	for i, m := range fed.Members {
		d := memberDeployment(t, i, ns, "web")
		if d.Status.Replicas != int32(want[m.Name]) {
			t.Errorf("%s: Deployment status.replicas = %d, the FederatedDeployment showed %d", m.Name, d.Status.Replicas, want[m.Name])
		}
	}
}
