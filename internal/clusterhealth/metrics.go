package clusterhealth

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	readyGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "fedwarden_cluster_ready",
		Help: "1 when the member cluster's Ready condition is True, 0 otherwise.",
	}, []string{"cluster"})
	probeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "fedwarden_cluster_probe_duration_seconds",
		Help:    "Time a health probe of a member cluster took, by outcome.",
		Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"cluster", "outcome"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedwarden_cluster_status_writes_total",
		Help: "FederatedCluster status updates written by the health controller.",
	}, []string{"cluster"})
	breakerTrips = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "fedwarden_cluster_breaker_trips_total",
		Help: "Times the member's breaker found it not answering (requests waited with no answer) and paused requests to it.",
	}, []string{"cluster"})
)

func init() {
	ctrlmetrics.Registry.MustRegister(readyGauge, probeDuration, statusWrites, breakerTrips)
}

var outcomeNames = map[outcome]string{
	probeReady:       "ready",
	probeNotReady:    "not_ready",
	probeUnreachable: "unreachable",
	probeUntrusted:   "untrusted",
	probeRejected:    "rejected",
}

// forgetMetrics drops the series of a cluster that left the federation.
func forgetMetrics(cluster string) {
	readyGauge.DeleteLabelValues(cluster)
	probeDuration.DeletePartialMatch(prometheus.Labels{"cluster": cluster})
	statusWrites.DeleteLabelValues(cluster)
	breakerTrips.DeleteLabelValues(cluster)
}
