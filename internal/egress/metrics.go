package egress

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var refused = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "fedwarden_member_dials_refused_total",
	Help: "Connections to a member cluster refused because the address is outside --member-networks.",
}, []string{"cluster"})

func init() {
	ctrlmetrics.Registry.MustRegister(refused)
}
