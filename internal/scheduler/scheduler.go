package scheduler

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/scheduler/framework"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/capacity"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusteraffinity"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/clusterready"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/geospread"
	"github.com/fedwarden/fedwarden/internal/scheduler/plugins/replicadivision"
)

// DefaultPlugins enables every plugin.
const DefaultPlugins = "*"

// Registry returns the plugins Fedwarden ships, in the order they run.
func Registry() *framework.Registry {
	r := &framework.Registry{}
	r.Register(clusteraffinity.Name, clusteraffinity.New)
	r.Register(clusterready.Name, clusterready.New)
	r.Register(capacity.Name, capacity.New)
	r.Register(geospread.Name, geospread.New)
	r.Register(replicadivision.Name, replicadivision.New)
	return r
}

// CapacitySource tells a cluster's free room for pods of namespace, the
// room held by the pods that own selects there counting as free; nil when
// it is not known (yet).
type CapacitySource interface {
	Capacity(cluster, namespace string, own labels.Selector) *framework.Capacity
}

// Scheduler turns host objects into a framework.State and decides.
type Scheduler struct {
	fw       *framework.Framework
	capacity CapacitySource
}

// New returns a scheduler running the plugins plugins names (see
// framework.Registry.ParseEnabled); capacity may be nil.
func New(plugins string, capacitySource CapacitySource) (*Scheduler, error) {
	reg := Registry()
	enabled, err := reg.ParseEnabled(plugins)
	if err != nil {
		return nil, err
	}
	fw, err := framework.New(reg, enabled)
	if err != nil {
		return nil, err
	}
	return &Scheduler{fw: fw, capacity: capacitySource}, nil
}

// MeasuresCapacity tells whether the Capacity plugin runs, and so whether
// member capacity is read.
func (s *Scheduler) MeasuresCapacity() bool {
	return s.capacity != nil && s.fw.Enabled(capacity.Name)
}

// Input is what one decision is made from.
type Input struct {
	// Federated is the federated resource.
	Federated *unstructured.Unstructured
	// Placement is its spec.placement.
	Placement typesv1beta1.Placement
	// Clusters are the joined clusters.
	Clusters []corev1beta1.FederatedCluster
	// Preference is the ReplicaSchedulingPreference targeting the
	// resource, if any.
	Preference *schedulingv1alpha1.ReplicaSchedulingPreference
	// Previous is the last decision (the CPV's spec.clusters).
	Previous []typesv1beta1.PlacedCluster
	// Holding are the clusters known to hold a copy besides those of
	// Previous: those the CPV's status records, and those whose member
	// cache shows one. A cluster missing here is not taken to hold none.
	Holding []string
	// Spread is the spread constraints Previous was decided under (the
	// CPV's spec.spread); nil when not recorded.
	Spread *typesv1beta1.RecordedSpread
	// Restriction, when set, keeps the resource to some clusters (those
	// its namespace is federated to); only an intent restriction removes a
	// copy.
	Restriction *Restriction
	// FailedOver are the clusters that failed under the resource's
	// failover policy (see failover.Judge), and Tolerated those not Ready
	// within its toleration. Both nil without a policy.
	FailedOver, Tolerated map[string]bool
}

// Restriction keeps a resource to some clusters, for a reason the user
// sees on the others (see framework.Restriction).
type Restriction = framework.Restriction

// Schedule decides where in.Federated goes.
func (s *Scheduler) Schedule(in Input) framework.Decision {
	st := &framework.State{Workload: workloadOf(in), Restriction: in.Restriction}
	st.Clusters = s.candidates(in, st.Workload)
	return s.fw.Schedule(st)
}

// candidates returns every joined cluster, and the clusters the placement
// names or the last decision holds that are not joined, sorted by name.
func (s *Scheduler) candidates(in Input, w *framework.Workload) []*framework.Cluster {
	previous := map[string]*framework.Previous{}
	for _, p := range in.Previous {
		previous[string(p.Name)] = &framework.Previous{Replicas: p.Replicas, Surge: p.Surge}
	}
	measure := s.MeasuresCapacity() && (w.Replicas != nil || w.Preference != nil)
	var out []*framework.Cluster
	seen := map[string]bool{}
	for i := range in.Clusters {
		fc := &in.Clusters[i]
		c := clusterOf(fc)
		c.Previous = previous[fc.Name]
		c.FailedOver = in.FailedOver[fc.Name] && c.Previous != nil
		c.Tolerated = in.Tolerated[fc.Name] && c.Previous != nil
		c.SurgeEnded = c.Previous != nil && c.Previous.Surge && len(in.FailedOver) == 0
		c.HasCopy = c.Previous != nil || slices.Contains(in.Holding, fc.Name)
		if measure {
			c.Capacity = s.capacity.Capacity(fc.Name, w.Namespace, w.PodSelector)
		}
		seen[fc.Name] = true
		out = append(out, c)
	}
	for _, name := range absentNames(in) {
		if !seen[name] {
			seen[name] = true
			out = append(out, &framework.Cluster{Name: name, Previous: previous[name], HasCopy: previous[name] != nil})
		}
	}
	slices.SortFunc(out, func(a, b *framework.Cluster) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// absentNames are the names the placement or last decision mention.
func absentNames(in Input) []string {
	var names []string
	for _, p := range in.Placement.Clusters {
		names = append(names, string(p.Name))
	}
	for _, p := range in.Previous {
		names = append(names, string(p.Name))
	}
	return names
}

func clusterOf(fc *corev1beta1.FederatedCluster) *framework.Cluster {
	c := &framework.Cluster{Name: fc.Name, Labels: fc.Labels, Region: fc.Spec.Region, Joined: true}
	for _, z := range fc.Spec.Zones {
		c.Zones = append(c.Zones, string(z))
	}
	ready := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
	switch {
	case ready == nil:
		c.NotReady = "not probed yet"
	case ready.Status == metav1.ConditionTrue:
		c.Ready = true
	default:
		c.NotReady = ready.Reason
	}
	return c
}
