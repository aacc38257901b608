package propagation

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var memberWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_member_writes_total",
	Help: "Writes to member clusters by the propagation controllers, by cluster and verb (apply, delete, create-namespace).",
}, []string{"cluster", "verb"})

func init() {
	ctrlmetrics.Registry.MustRegister(memberWrites)
}
