package scheduler

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
)

const deployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  template:
    spec:
      replicas: 3
      template:
        spec:
          initContainers: [{name: init, resources: {requests: {cpu: "2"}}}]
          containers:
          - {name: a, resources: {requests: {cpu: 500m, memory: 1Gi}}}
          - {name: b, resources: {requests: {cpu: 250m}}}
`

func decode(t *testing.T, s string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(s), &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestWorkloadOf(t *testing.T) {
	t.Parallel()
	w := workloadOf(Input{Federated: decode(t, deployment)})
	if w.Replicas == nil || *w.Replicas != 3 {
		t.Errorf("replicas = %v, want 3", w.Replicas)
	}
	// The init container asks for more CPU than the containers together.
	if cpu, mem := w.PodRequests.Cpu().String(), w.PodRequests.Memory().String(); cpu != "2" || mem != "1Gi" {
		t.Errorf("pod requests = cpu %s memory %s, want 2 and 1Gi", cpu, mem)
	}
	cm := workloadOf(Input{Federated: decode(t, "{kind: FederatedConfigMap, spec: {template: {data: {a: b}}}}")})
	if cm.Replicas != nil || len(cm.PodRequests) != 0 {
		t.Errorf("a ConfigMap has replicas %v and requests %v", cm.Replicas, cm.PodRequests)
	}
	noReplicas := workloadOf(Input{Federated: decode(t, "{kind: FederatedDeployment, spec: {template: {spec: {template: {spec: {containers: []}}}}}}")})
	if noReplicas.Replicas == nil || *noReplicas.Replicas != 1 {
		t.Errorf("a Deployment without replicas has %v, want the default 1", noReplicas.Replicas)
	}
}

func readyCluster(name, region string) corev1beta1.FederatedCluster {
	return corev1beta1.FederatedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1beta1.FederatedClusterSpec{Region: region},
		Status: corev1beta1.FederatedClusterStatus{Conditions: []metav1.Condition{
			{Type: corev1beta1.ClusterReady, Status: metav1.ConditionTrue, Reason: corev1beta1.ReasonClusterReady},
		}},
	}
}

// capacities is a CapacitySource from a map.
type capacities map[string]*framework.Capacity

func (c capacities) Capacity(cluster, _ string, _ labels.Selector) *framework.Capacity {
	return c[cluster]
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	s, err := New(DefaultPlugins, capacities{})
	if err != nil {
		t.Fatal(err)
	}
	down := readyCluster("c", "eu")
	down.Status.Conditions[0].Status, down.Status.Conditions[0].Reason = metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable
	in := Input{
		Federated: decode(t, deployment),
		Placement: typesv1beta1.Placement{Clusters: []typesv1beta1.PlacementCluster{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "gone"}}},
		Clusters:  []corev1beta1.FederatedCluster{readyCluster("a", "us"), readyCluster("b", "eu"), down, readyCluster("z", "eu")},
		Preference: &schedulingv1alpha1.ReplicaSchedulingPreference{Spec: schedulingv1alpha1.ReplicaSchedulingPreferenceSpec{
			TotalReplicas: 10, Clusters: map[string]schedulingv1alpha1.ClusterPreferences{"a": {Weight: 2}, "b": {Weight: 3}},
		}},
		Restriction: &Restriction{Plugin: "FederatedNamespace", Clusters: []string{"a", "c", "gone", "z"}, Reason: "namespace shop is not federated to it"},
	}
	d := s.Schedule(in)
	if got := d.Summary(); got != "a (10 replicas)" {
		t.Errorf("decision = %s, want a (10 replicas)", got)
	}
	msg := d.Explain(1024)
	for _, want := range []string{
		"b: FederatedNamespace: namespace shop is not federated to it",
		"c: ClusterReady: not Ready: ClusterUnreachable",
		"gone: ClusterReady: not joined",
		"z: ClusterAffinity: not in spec.placement.clusters",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Explain = %q, missing %q", msg, want)
		}
	}
	// Already scheduled on c, which went down: c keeps its place.
	in.Previous = []typesv1beta1.PlacedCluster{{Name: "a", Replicas: new(int32(4))}, {Name: "c", Replicas: new(int32(6))}}
	if got := s.Schedule(in).Summary(); got != "a (4 replicas), c (6 replicas)" {
		t.Errorf("decision with c scheduled and down = %s, want a (4 replicas), c (6 replicas)", got)
	}
}

func TestNewRejectsUnknownPlugins(t *testing.T) {
	t.Parallel()
	if _, err := New("*,-Nope", nil); err == nil || !strings.Contains(err.Error(), `unknown scheduler plugin "Nope"`) {
		t.Errorf("New(*,-Nope) error = %v", err)
	}
}
