package scheduler

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
		Restriction: &Restriction{Plugin: "FederatedNamespace", Clusters: []string{"a", "c", "gone", "z"}, Reason: "namespace shop is not federated to it", Intent: true},
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

// Scheduler plugins are optimisations: when the state of the clusters
// changes (capacity, readiness, a spread decided again after an outage),
// a cluster that holds a copy keeps it, and the decision says why. Only
// the user's intent (placement, spread constraints changed, unjoin)
// removes it.
func TestStateDrivenPluginsNeverDropACopy(t *testing.T) {
	t.Parallel()
	s, err := New(DefaultPlugins, capacities{
		"east-1": roomFor("16"), "east-2": roomFor("4"), "west-1": roomFor("0"),
	})
	if err != nil {
		t.Fatal(err)
	}
	down := readyCluster("east-1", "us")
	down.Status.Conditions[0].Status, down.Status.Conditions[0].Reason = metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable
	ready := []corev1beta1.FederatedCluster{readyCluster("east-1", "us"), readyCluster("east-2", "us"), readyCluster("west-1", "eu")}
	names := func(names ...string) []typesv1beta1.PlacementCluster {
		var out []typesv1beta1.PlacementCluster
		for _, n := range names {
			out = append(out, typesv1beta1.PlacementCluster{Name: typesv1beta1.ClusterName(n)})
		}
		return out
	}
	placed := func(names ...string) []typesv1beta1.PlacedCluster {
		var out []typesv1beta1.PlacedCluster
		for _, n := range names {
			out = append(out, typesv1beta1.PlacedCluster{Name: typesv1beta1.ClusterName(n)})
		}
		return out
	}
	onePerRegion := []typesv1beta1.SpreadConstraint{{SpreadBy: typesv1beta1.SpreadByRegion, MaxClustersPerGroup: new(int32(1))}}
	surge := func(p []typesv1beta1.PlacedCluster, name string) []typesv1beta1.PlacedCluster {
		for i := range p {
			p[i].Surge = string(p[i].Name) == name
		}
		return p
	}
	tests := []struct {
		name       string
		placement  typesv1beta1.Placement
		clusters   []corev1beta1.FederatedCluster
		previous   []typesv1beta1.PlacedCluster
		holding    []string
		spread     *typesv1beta1.RecordedSpread
		failedOver []string
		want       string
		kept       []string
	}{
		{
			name:       "a surge stays while the cluster it stands in for is failed over",
			placement:  typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			clusters:   []corev1beta1.FederatedCluster{down, readyCluster("east-2", "us")},
			previous:   surge(placed("east-1", "east-2"), "east-2"),
			spread:     &typesv1beta1.RecordedSpread{Constraints: onePerRegion},
			failedOver: []string{"east-1"},
			want:       "east-1, east-2",
			kept:       []string{"east-1: GeoSpread: region us already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:      "a surge is dropped once no cluster is failed over: the failover policy's intent",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			previous:  surge(placed("east-1", "east-2"), "east-2"),
			spread:    &typesv1beta1.RecordedSpread{Constraints: onePerRegion},
			want:      "east-1",
		},
		{
			name:      "capacity drops where it runs",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "west-1")},
			previous:  placed("east-1", "west-1"),
			want:      "east-1, west-1",
			kept:      []string{"west-1: Capacity: needs 2 cpu, none free"},
		},
		{
			name:      "capacity drops where the CPV's status records a copy",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "west-1")},
			previous:  placed("east-1"),
			holding:   []string{"west-1"},
			want:      "east-1, west-1",
			kept:      []string{"west-1: Capacity: needs 2 cpu, none free"},
		},
		{
			name:      "a cluster too small that holds nothing gets nothing",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "west-1")},
			previous:  placed("east-1"),
			want:      "east-1",
		},
		{
			name:      "the placement drops it",
			placement: typesv1beta1.Placement{Clusters: names("east-1")},
			previous:  placed("east-1", "west-1"),
			want:      "east-1",
		},
		{
			name:      "unjoined",
			placement: typesv1beta1.Placement{ClusterSelector: &typesv1beta1.ClusterSelector{}},
			previous:  placed("east-1", "gone"),
			want:      "east-1, east-2",
		},
		{
			name:      "a spread decided again after an outage",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			clusters:  []corev1beta1.FederatedCluster{down, readyCluster("east-2", "us")},
			previous:  placed("east-1"),
			spread:    &typesv1beta1.RecordedSpread{Constraints: onePerRegion},
			want:      "east-1, east-2",
			kept:      []string{"east-1: GeoSpread: region us already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:      "a spread decided again once the outage is over",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			previous:  placed("east-1", "east-2"),
			spread:    &typesv1beta1.RecordedSpread{Constraints: onePerRegion},
			want:      "east-1, east-2",
			kept:      []string{"east-2: GeoSpread: region us already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:      "spread constraints not recorded count as unchanged",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			previous:  placed("east-1", "east-2"),
			want:      "east-1, east-2",
			kept:      []string{"east-2: GeoSpread: region us already has its 1 cluster (maxClustersPerGroup)"},
		},
		{
			name:      "the user changed the spread constraints",
			placement: typesv1beta1.Placement{Clusters: names("east-1", "east-2"), SpreadConstraints: onePerRegion},
			previous:  placed("east-1", "east-2"),
			spread:    &typesv1beta1.RecordedSpread{},
			want:      "east-1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clusters := tt.clusters
			if clusters == nil {
				clusters = ready
			}
			d := s.Schedule(Input{
				Federated: decode(t, twoPodsOfOneCPU), Placement: tt.placement, Clusters: clusters,
				Previous: tt.previous, Holding: tt.holding, Spread: tt.spread,
			}.failingOver(tt.failedOver))
			var kept []string
			for _, v := range d.Kept {
				kept = append(kept, v.String())
			}
			if got := d.Summary(); got != tt.want || !slices.Equal(kept, tt.kept) {
				t.Errorf("decision = %s, kept %q; want %s, kept %q\n%s", got, kept, tt.want, tt.kept, d.Explain(1024))
			}
		})
	}
}

const twoPodsOfOneCPU = `
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec: {template: {spec: {replicas: 2, template: {spec: {containers: [{name: a, resources: {requests: {cpu: "1"}}}]}}}}}
`

func roomFor(cpu string) *framework.Capacity {
	return &framework.Capacity{Free: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourcePods: resource.MustParse("110")}}
}

func TestSpreadChanged(t *testing.T) {
	t.Parallel()
	one := []typesv1beta1.SpreadConstraint{{SpreadBy: typesv1beta1.SpreadByRegion, MaxClustersPerGroup: new(int32(1))}}
	two := []typesv1beta1.SpreadConstraint{{SpreadBy: typesv1beta1.SpreadByRegion, MaxClustersPerGroup: new(int32(2))}}
	tests := []struct {
		recorded *typesv1beta1.RecordedSpread
		now      []typesv1beta1.SpreadConstraint
		want     bool
	}{
		{nil, one, false},
		{&typesv1beta1.RecordedSpread{}, nil, false},
		{&typesv1beta1.RecordedSpread{Constraints: []typesv1beta1.SpreadConstraint{}}, nil, false},
		{&typesv1beta1.RecordedSpread{Constraints: one}, one, false},
		{&typesv1beta1.RecordedSpread{Constraints: one}, two, true},
		{&typesv1beta1.RecordedSpread{}, one, true},
		{&typesv1beta1.RecordedSpread{Constraints: one}, nil, true},
	}
	for i, tt := range tests {
		if got := spreadChanged(Input{Spread: tt.recorded, Placement: typesv1beta1.Placement{SpreadConstraints: tt.now}}); got != tt.want {
			t.Errorf("%d: spreadChanged(%v → %v) = %t, want %t", i, tt.recorded, tt.now, got, tt.want)
		}
	}
}

// failingOver is in with the clusters named failed over.
func (in Input) failingOver(names []string) Input {
	for _, n := range names {
		if in.FailedOver == nil {
			in.FailedOver = map[string]bool{}
		}
		in.FailedOver[n] = true
	}
	return in
}
