package metricsendpoint

import (
	"net"
	"os"
	"strconv"
)

// inPodEnv is the variable the kubelet sets in every container of a pod
// (whatever enableServiceLinks says), and that client-go's in-cluster
// configuration reads too.
const inPodEnv = "KUBERNETES_SERVICE_HOST"

// DefaultAddress is where an endpoint of Fedwarden's (/metrics, /healthz
// and /readyz) listens when no flag says otherwise: every interface in a
// pod, where the kubelet's probes and Prometheus reach it on the pod's IP,
// and the loopback interface anywhere else, so that a controller run by
// hand on a laptop serves neither its metrics nor its health to the network
// the laptop is on.
func DefaultAddress(port int) string {
	return defaultAddress(port, os.Getenv(inPodEnv) != "")
}

func defaultAddress(port int, inPod bool) string {
	host := "127.0.0.1"
	if inPod {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
