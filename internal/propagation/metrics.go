package propagation

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var memberWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_member_writes_total",
	Help: "Writes to member clusters by the propagation controllers, by cluster and verb (apply, delete, create-namespace).",
}, []string{"cluster", "verb"})

var schedulingSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "fedwarden_scheduling_duration_seconds",
	Help:    "Time taken to decide where one federated resource goes: reading its ReplicaSchedulingPreference and namespace placement from the cache, and running the scheduler plugins.",
	Buckets: prometheus.ExponentialBuckets(0.000025, 2, 16),
})

var schedulingDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_scheduling_decisions_total",
	Help: "Scheduling outcomes that changed a resource's Scheduled condition: a new decision (reason Scheduled), or a new reason why none could be made (Unschedulable).",
}, []string{"reason"})

var driftDetectionSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "fedwarden_drift_detection_seconds",
	Help:    "Time from a member event (an update or deletion of a managed copy) reaching Fedwarden until the drift it caused was classified.",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
})

var driftRemediationSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
	Name:    "fedwarden_drift_remediation_seconds",
	Help:    "Time from a member event reaching Fedwarden until the drifted copy was written back (remediation Enforce).",
	Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
})

var driftedResources = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "fedwarden_drifted_resources",
	Help: "Federated resources whose copy in a cluster is not InSync, by cluster, federated kind and drift state.",
}, []string{"cluster", "kind", "reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(memberWrites, schedulingSeconds, schedulingDecisions, driftDetectionSeconds, driftRemediationSeconds, driftedResources)
}

// driftGauge keeps fedwarden_drifted_resources for one federated kind: the
// state of each resource in each cluster where it is not InSync.
type driftGauge struct {
	kind  string
	mu    sync.Mutex
	state map[types.NamespacedName]map[string]string // resource → cluster → state
}

func newDriftGauge(kind string) *driftGauge {
	return &driftGauge{kind: kind, state: map[types.NamespacedName]map[string]string{}}
}

// set records the states a sync of the resource key found.
func (g *driftGauge) set(key types.NamespacedName, results []clusterResult) {
	now := map[string]string{}
	for _, res := range results {
		if res.state != "" && res.state != typesv1beta1.InSync {
			now[res.name] = string(res.state)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.move(g.state[key], now)
	if len(now) == 0 {
		delete(g.state, key)
		return
	}
	g.state[key] = now
}

// forget drops a resource that is gone.
func (g *driftGauge) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.move(g.state[key], nil)
	delete(g.state, key)
}

// move takes one resource's gauge contributions from before to after.
func (g *driftGauge) move(before, after map[string]string) {
	for cluster, state := range before {
		if after[cluster] != state {
			driftedResources.WithLabelValues(cluster, g.kind, state).Dec()
		}
	}
	for cluster, state := range after {
		if before[cluster] != state {
			driftedResources.WithLabelValues(cluster, g.kind, state).Inc()
		}
	}
}
