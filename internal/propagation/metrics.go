package propagation

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
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

func init() {
	ctrlmetrics.Registry.MustRegister(memberWrites, schedulingSeconds, schedulingDecisions)
}
