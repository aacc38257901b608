package notify

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Each counter is by sink: its index among the --notify-webhook flags and
// its host, never the rest of its URL.
var sinkLabels = []string{"sink", "host"}

var notificationsSent = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_notifications_sent_total",
	Help: "Drift notifications (CloudEvents) a webhook sink accepted (2xx), by sink index and host.",
}, sinkLabels)

var notificationsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_notifications_failed_total",
	Help: "Drift notifications a webhook sink did not accept after every retry, or refused with a 4xx, by sink index and host.",
}, sinkLabels)

var notificationsDropped = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_notifications_dropped_total",
	Help: "Drift notifications dropped because the sink's queue was full (--notify-queue-size), by sink index and host.",
}, sinkLabels)

func init() {
	ctrlmetrics.Registry.MustRegister(notificationsSent, notificationsFailed, notificationsDropped)
}

// counters are one sink's counters.
type counters struct {
	sent, failed, dropped prometheus.Counter
}

func countersFor(labels ...string) counters {
	return counters{
		sent:    notificationsSent.WithLabelValues(labels...),
		failed:  notificationsFailed.WithLabelValues(labels...),
		dropped: notificationsDropped.WithLabelValues(labels...),
	}
}
