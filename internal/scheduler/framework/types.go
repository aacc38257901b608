package framework

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// Workload is what is being scheduled.
type Workload struct {
	// Kind, Namespace and Name of the federated resource.
	Kind, Namespace, Name string
	// Placement is the resource's spec.placement.
	Placement typesv1beta1.Placement
	// Replicas is the template's spec.replicas; nil for kinds without one.
	Replicas *int32
	// PodRequests are the resource requests of one pod of the template;
	// empty when the template has no pods or requests nothing.
	PodRequests corev1.ResourceList
	// PodSelector selects the workload's own pods in a member (the
	// template's spec.selector); nil when it has none.
	PodSelector labels.Selector
	// Preference divides the replicas, when a ReplicaSchedulingPreference
	// targets the resource.
	Preference *schedulingv1alpha1.ReplicaSchedulingPreferenceSpec
	// SpreadChanged tells whether the user changed the placement's spread
	// constraints since the last decision: only then does a spread leave
	// out a cluster that holds a copy (see IntentPlugin).
	SpreadChanged bool
}

// Cluster is one candidate cluster, as plugins see it.
type Cluster struct {
	Name   string
	Labels map[string]string
	Region string
	Zones  []string
	// Joined is false for a cluster the placement names that has no
	// FederatedCluster.
	Joined bool
	// Ready tells whether the cluster's Ready condition is True; NotReady
	// says why not.
	Ready    bool
	NotReady string
	// Previous is the cluster's place in the last decision; nil when the
	// resource was not scheduled there.
	Previous *Previous
	// HasCopy tells whether the resource already has a copy there, as far
	// as anything recorded or seen says: the last decision placed it, the
	// CPV records a copy, or the member's cache holds one. A cluster that
	// holds a copy is dropped only by the user's intent (see IntentPlugin).
	HasCopy bool
	// Capacity is the cluster's free room; nil when it is not measured
	// (yet).
	Capacity *Capacity
	// FailedOver tells that the cluster failed under the workload's
	// failover policy: it keeps its copy and the replicas it ran, which
	// the other clusters run meanwhile (see replicadivision).
	FailedOver bool
	// Tolerated tells that the cluster is not Ready, but within the
	// toleration of the workload's failover policy: plugins that rank
	// clusters by readiness take it as serving still.
	Tolerated bool
	// SurgeEnded tells that the last decision chose the cluster as a
	// surge, standing in for a failed-over cluster, and that none is
	// failed over any more: a plugin that leaves it out drops its copy,
	// the failover policy being the intent.
	SurgeEnded bool
}

// Serving tells whether c runs its part of the workload, as far as
// ranking goes: Ready, or within its failover toleration, and not failed
// over.
func (c *Cluster) Serving() bool { return (c.Ready || c.Tolerated) && !c.FailedOver }

// Previous is a cluster's place in the last decision.
type Previous struct {
	// Replicas the cluster was given; nil when the template's.
	Replicas *int32
	// Surge tells that it was chosen standing in for a failed-over
	// cluster.
	Surge bool
}

// Scheduled tells whether the last decision placed the resource on c.
func (c *Cluster) Scheduled() bool { return c.Previous != nil }

// PreviousReplicas is how many replicas the last decision gave c: 0 when it
// was not scheduled there, the template's when no count was recorded.
func (c *Cluster) PreviousReplicas(w *Workload) int64 {
	switch {
	case c.Previous == nil:
		return 0
	case c.Previous.Replicas != nil:
		return int64(*c.Previous.Replicas)
	case w.Replicas != nil:
		return int64(*w.Replicas)
	default:
		return 0
	}
}

// State is what every plugin is given: the workload and all candidates.
// New inputs become fields here, never parameters. A State belongs to one
// decision, made by one goroutine.
type State struct {
	Workload *Workload
	Clusters []*Cluster
	// Restriction, when set, keeps the workload to some clusters; it runs
	// as the first Filter (see Restriction).
	Restriction *Restriction

	memo map[string]any
}

// Memo returns what compute returned the first time it was asked for key
// during this decision: plugins keep figures over all clusters there
// rather than computing them again for each cluster.
func (s *State) Memo(key string, compute func() any) any {
	if v, ok := s.memo[key]; ok {
		return v
	}
	if s.memo == nil {
		s.memo = map[string]any{}
	}
	v := compute()
	s.memo[key] = v
	return v
}

// ScoredCluster is a feasible cluster with its total score.
type ScoredCluster struct {
	*Cluster
	Score int64
}
