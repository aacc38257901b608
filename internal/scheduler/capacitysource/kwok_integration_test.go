package capacitysource_test

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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/inprocess"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/capacitysource"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// The members of the KWOK test: roomy has one Node of 8 CPUs; cramped has
// two of 2 CPUs, the second of which takes no more than 4 Pods. Both have a
// Node named fedtest.KWOKNodeName, which the federated workloads' Pods name
// (there is no kube-scheduler to bind them).
const (
	roomy      = "roomy"
	cramped    = "cramped"
	secondNode = "kwok-node-2"
	// fillerNamespace holds, in cramped, the Deployments that fill it.
	fillerNamespace = "filler"
)

// Bounds of the waits: Pods become Running within seconds of their
// Deployment on an idle machine (kube-controller-manager creates them,
// KWOK plays them); the bounds leave room for a starved one.
const (
	kwokSettled  = 2 * time.Minute
	kwokBedStart = 5 * time.Minute
)

// kwokBed is a host and the two members, each with its KWOK Nodes, joined
// and run by the propagation controllers in this process with the
// scheduler and the capacity Source as `fedwarden controller-manager` wires
// them.
type kwokBed struct {
	*inprocess.Bed
	// src is the Source the scheduler reads, through the members'
	// credentials that `fedwarden join` made.
	src *capacitysource.Source
}

// TestCapacityFollowsKWOKNodes fills a member's KWOK Nodes with running
// Pods and checks that the free room measured, and so where a new
// workload's replicas go, follow what the Nodes really hold: a workload
// that does not fit in the filled member runs only in the other, with the
// Scheduled condition saying why; once some Pods are gone, a
// ReplicaSchedulingPreference's replicas are divided by the room each
// member has. Every copy placed becomes Healthy, its Pods Running on the
// KWOK Nodes.
func TestCapacityFollowsKWOKNodes(t *testing.T) {
	b := startKWOKBed(t)

	// Empty members: the Nodes' allocatable.
	b.waitForRoom(t, roomy, list("cpu", "8", "memory", "16Gi", "pods", "110"))
	b.waitForRoom(t, cramped, list("cpu", "4", "memory", "8Gi", "pods", "114"))

	// 3.6 of cramped's 4 CPUs, and every Pod its second Node takes.
	b.runInMember(t, cramped, podsOn(fillerNamespace, "filler-1", fedtest.KWOKNodeName, 2, "900m", "1Gi"))
	b.runInMember(t, cramped, podsOn(fillerNamespace, "filler-2", secondNode, 4, "450m", "512Mi"))
	b.waitForRoom(t, cramped, list("cpu", "400m", "memory", "4Gi", "pods", "108"))

	ns := b.Namespace(t, "kwok")
	web := federatedWorkload(ns, "web", 3, "1", "256Mi")
	must(t, b.Host.Create(t.Context(), web))
	b.waitForPlacement(t, ns, "web", map[string]int32{roomy: 3})
	b.waitForScheduledMessage(t, ns, "web", "scheduled to roomy; ruled out cramped: Capacity: needs 3 cpu, 0.4 free")
	b.waitForHealthy(t, ns, "web", roomy)
	b.checkNoCopy(t, cramped, ns, "web")
	b.waitForRoom(t, roomy, list("cpu", "5", "memory", "15616Mi", "pods", "107"))

	// Half of cramped's Pods go: 2.2 CPUs free, room for two more Pods of
	// 1 CPU. web, which needs 3, would still not fit.
	b.deleteInMember(t, cramped, fillerNamespace, "filler-1")
	b.waitForRoom(t, cramped, list("cpu", "2200m", "memory", "6Gi", "pods", "110"))

	// Equal weights would give each member 3; cramped has room for 2.
	must(t, b.Host.Create(t.Context(), &schedulingv1alpha1.ReplicaSchedulingPreference{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{
			TargetKind: "FederatedDeployment", TotalReplicas: 6,
			Clusters: map[string]schedulingv1alpha1.ClusterPreferences{"*": {Weight: 1}},
		},
	}))
	must(t, b.Host.Create(t.Context(), federatedWorkload(ns, "api", 1, "1", "512Mi")))
	b.waitForPlacement(t, ns, "api", map[string]int32{cramped: 2, roomy: 4})
	b.waitForScheduledMessage(t, ns, "api", "scheduled to cramped (2 replicas), roomy (4 replicas)")
	b.waitForHealthy(t, ns, "api", cramped, roomy)
	b.waitForRoom(t, cramped, list("cpu", "200m", "memory", "5Gi", "pods", "108"))
	b.waitForRoom(t, roomy, list("cpu", "1", "memory", "13568Mi", "pods", "103"))
}

// startKWOKBed starts the bed, stopped when the test ends.
func startKWOKBed(t *testing.T) *kwokBed {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd, kube-apiserver and KWOK processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), kwokBedStart)
	defer cancel()
	// The default controllers: Deployments get their ReplicaSets and Pods.
	bed, err := inprocess.Start(ctx, "capacitysource-kwok",
		localfed.WithMemberNames(roomy, cramped), localfed.WithControllers(localfed.DefaultControllers...))
	if err != nil {
		t.Fatalf("starting the test bed: %v", err)
	}
	t.Cleanup(func() {
		if err := bed.Stop(t.Failed()); err != nil {
			t.Errorf("stopping the test bed: %v", err)
		}
	})
	fedtest.RunKWOK(t, bed.Fed.Member(roomy), fedtest.WithKWOKNodes(
		fedtest.KWOKNode{Name: fedtest.KWOKNodeName, Allocatable: list("cpu", "8", "memory", "16Gi", "pods", "110")}))
	fedtest.RunKWOK(t, bed.Fed.Member(cramped), fedtest.WithKWOKNodes(
		fedtest.KWOKNode{Name: fedtest.KWOKNodeName, Allocatable: list("cpu", "2", "memory", "4Gi", "pods", "110")},
		fedtest.KWOKNode{Name: secondNode, Allocatable: list("cpu", "2", "memory", "4Gi", "pods", "4")}))
	b := &kwokBed{Bed: bed}
	if err := bed.StartManager(b.addControllers); err != nil {
		t.Fatalf("starting the controllers: %v", err)
	}
	if err := bed.Join(); err != nil {
		t.Fatal(err)
	}
	fedtest.EnableDeployments(t, bed.Host)
	return b
}

// addControllers adds the federation controller with the scheduler and a
// capacity Source that schedules every resource again when a member's
// Nodes change, as `fedwarden controller-manager` does; the Source is kept
// for the test to read.
func (b *kwokBed) addControllers(mgr ctrl.Manager, members *clustercache.Cache) error {
	var federation *typeconfig.Reconciler
	b.src = capacitysource.New(members, capacitysource.Options{
		OnChange: func(cluster string) { federation.ResyncAll(cluster) },
		Debounce: time.Second,
	})
	sched, err := scheduler.New(scheduler.DefaultPlugins, b.src)
	if err != nil {
		return err
	}
	opts := propagation.DefaultOptions()
	opts.Namespace = inprocess.ControlPlaneNamespace
	opts.Scheduler = sched
	if opts.Health, err = copyhealth.New(); err != nil {
		return err
	}
	federation = typeconfig.NewReconciler(mgr, members, opts)
	return federation.SetupWithManager(mgr)
}

// waitForRoom waits until the Source measures free in cluster, no quota:
// what the scheduler sees of any workload that has no Pod there.
func (b *kwokBed) waitForRoom(t *testing.T, cluster string, free corev1.ResourceList) {
	t.Helper()
	poll.Eventually(t, kwokSettled, fmt.Sprintf("free room %v in %s", free, cluster), func(context.Context) (bool, string) {
		err := check(b.src.Capacity(cluster, "any", nil), framework.Capacity{Free: free})
		return err == nil, fmt.Sprint(err)
	})
}

// podsOn is a Deployment of replicas Pods bound to node, each requesting
// cpu and memory.
func podsOn(namespace, name, node string, replicas int32, cpu, memory string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: podTemplate(labels, node, cpu, memory),
		},
	}
}

func podTemplate(labels map[string]string, node, cpu, memory string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "app", Image: "nginx:1.27",
				Resources: corev1.ResourceRequirements{Requests: list("cpu", cpu, "memory", memory)},
			}},
		},
	}
}

// federatedWorkload is a FederatedDeployment placed on both members, of
// replicas Pods on their Node KWOKNodeName, each requesting cpu and memory.
func federatedWorkload(namespace, name string, replicas int32, cpu, memory string) *typesv1beta1.FederatedDeployment {
	labels := map[string]string{"app": name}
	return &typesv1beta1.FederatedDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: typesv1beta1.FederatedDeploymentSpec{
			Template: typesv1beta1.DeploymentTemplate{Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: podTemplate(labels, fedtest.KWOKNodeName, cpu, memory),
			}},
			Placement: typesv1beta1.Placement{Clusters: []typesv1beta1.PlacementCluster{{Name: roomy}, {Name: cramped}}},
		},
	}
}

// runInMember creates d in the member, its namespace first, and waits until
// every replica runs.
func (b *kwokBed) runInMember(t *testing.T, member string, d *appsv1.Deployment) {
	t.Helper()
	c := b.Members[member]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: d.Namespace}}
	if err := c.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	must(t, c.Create(t.Context(), d))
	b.waitForRunning(t, member, d.Namespace, d.Name, *d.Spec.Replicas)
}

// waitForRunning waits until the member's Deployment has replicas
// replicas, all available, and as many Pods Running on a KWOK Node.
func (b *kwokBed) waitForRunning(t *testing.T, member, namespace, name string, replicas int32) {
	t.Helper()
	c := b.Members[member]
	poll.Eventually(t, kwokSettled, fmt.Sprintf("%d replicas of %s/%s running in %s", replicas, namespace, name, member), func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
			return false, err.Error()
		}
		if d.Spec.Replicas == nil || *d.Spec.Replicas != replicas || d.Status.AvailableReplicas != replicas {
			return false, fmt.Sprintf("spec.replicas %v, status %+v", d.Spec.Replicas, d.Status)
		}
		running, err := runningPods(ctx, c, namespace, name)
		return err == nil && running == int(replicas), fmt.Sprintf("%d Pods running (%v)", running, err)
	})
}

// runningPods counts the Running Pods of app name that a KWOK Node runs.
func runningPods(ctx context.Context, c client.Client, namespace, name string) (int, error) {
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app": name}); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil &&
			slices.Contains([]string{fedtest.KWOKNodeName, secondNode}, p.Spec.NodeName) {
			n++
		}
	}
	return n, nil
}

// deleteInMember deletes the member's Deployment and waits until its Pods
// are gone: KWOK plays their deletion as a kubelet would.
func (b *kwokBed) deleteInMember(t *testing.T, member, namespace, name string) {
	t.Helper()
	c := b.Members[member]
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	must(t, c.Delete(t.Context(), d, client.PropagationPolicy(metav1.DeletePropagationForeground)))
	poll.Eventually(t, kwokSettled, fmt.Sprintf("the Pods of %s/%s gone from %s", namespace, name, member), func(ctx context.Context) (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"app": name}); err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d Pods left", len(pods.Items))
	})
}

// waitForPlacement waits until the ClusterPropagatedVersion of the
// FederatedDeployment places it on exactly the clusters of want, and each
// of those members runs its replicas: want's, or the template's where the
// CPV records none.
func (b *kwokBed) waitForPlacement(t *testing.T, namespace, name string, want map[string]int32) {
	t.Helper()
	poll.Eventually(t, kwokSettled, fmt.Sprintf("%s placed as %v", name, want), func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := b.Host.Get(ctx, cpvKey(namespace, name), cpv); err != nil {
			return false, err.Error()
		}
		return samePlacement(cpv.Spec.Clusters, want), fmt.Sprintf("spec.clusters %s", placementString(cpv.Spec.Clusters))
	})
	for member, replicas := range want {
		b.waitForRunning(t, member, namespace, name, replicas)
	}
}

// samePlacement tells whether placed names exactly the clusters of want,
// with want's replicas where placed records some.
func samePlacement(placed []typesv1beta1.PlacedCluster, want map[string]int32) bool {
	if len(placed) != len(want) {
		return false
	}
	for _, p := range placed {
		r, ok := want[string(p.Name)]
		if !ok || (p.Replicas != nil && *p.Replicas != r) {
			return false
		}
	}
	return true
}

func placementString(placed []typesv1beta1.PlacedCluster) string {
	parts := make([]string, 0, len(placed))
	for _, p := range placed {
		if p.Replicas != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", p.Name, *p.Replicas))
			continue
		}
		parts = append(parts, string(p.Name))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// cpvKey is the key of the ClusterPropagatedVersion of FederatedDeployment
// namespace/name.
func cpvKey(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: "deployment-" + name}
}

// waitForScheduledMessage waits until the FederatedDeployment's Scheduled
// condition is True with message.
func (b *kwokBed) waitForScheduledMessage(t *testing.T, namespace, name, message string) {
	t.Helper()
	poll.Eventually(t, kwokSettled, fmt.Sprintf("%s: Scheduled True, %q", name, message), func(ctx context.Context) (bool, string) {
		fd := &typesv1beta1.FederatedDeployment{}
		if err := b.Host.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, fd); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fd.Status.Conditions, typesv1beta1.FederatedScheduled)
		return c != nil && c.Status == metav1.ConditionTrue && c.Message == message, fmt.Sprintf("%+v", c)
	})
}

// waitForHealthy waits until the CPV records the copy in each cluster as
// Healthy, and no other cluster.
func (b *kwokBed) waitForHealthy(t *testing.T, namespace, name string, clusters ...string) {
	t.Helper()
	poll.Eventually(t, kwokSettled, fmt.Sprintf("%s Healthy in %v", name, clusters), func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := b.Host.Get(ctx, cpvKey(namespace, name), cpv); err != nil {
			return false, err.Error()
		}
		var healthy []string
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.Health == corev1beta1.HealthHealthy {
				healthy = append(healthy, string(cv.ClusterName))
			}
		}
		slices.Sort(healthy)
		return slices.Equal(healthy, clusters), fmt.Sprintf("cluster versions %+v", cpv.Status.ClusterVersions)
	})
}

// checkNoCopy fails the test if the member holds a Deployment name.
func (b *kwokBed) checkNoCopy(t *testing.T, member, namespace, name string) {
	t.Helper()
	err := b.Members[member].Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: name}, &appsv1.Deployment{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("%s holds a Deployment %s/%s (error %v); want none, as it has no room", member, namespace, name, err)
	}
}
