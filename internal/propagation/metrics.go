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
	Help:    "Time the scheduler took to decide where one federated resource goes.",
	Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10),
})

var schedulingDecisions = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_scheduling_decisions_total",
	Help: "Scheduling decisions that changed where a resource goes (reason Scheduled), or that could not be made (Unschedulable).",
}, []string{"reason"})

func init() {
	ctrlmetrics.Registry.MustRegister(memberWrites, schedulingSeconds, schedulingDecisions)
}
