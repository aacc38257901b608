package localfed

import (
	"fmt"
	"net"
	"sync"
)

// bindAttempts is how often a kube-apiserver is started when its port turns
// out to be taken: on a new port for a new cluster, on the same port for a
// restart.
const bindAttempts = 5

// handedOut remembers the ports given to processes of this program, so that
// two federations started at once never receive the same port.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort asks the kernel for a free port on 127.0.0.1. The port is free when
// it returns, but released: another program (another test binary of
// `go test ./...`) may take it before the kube-apiserver binds it. Then the
// kube-apiserver exits saying so, and Cluster.serve starts it again.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port: the kernel keeps offering ports already handed out")
}
