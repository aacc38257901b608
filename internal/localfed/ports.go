package localfed

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// bindAttempts is how often a kube-apiserver is started when its port turns
// out to be taken: on a new port for a new cluster, on the same port for a
// restart.
const bindAttempts = 5

// lowestPort is the lowest port freePort hands out below the kernel's
// ephemeral range; minReserved is how many ports that range must leave
// below it, else freePort takes ephemeral ports.
const (
	lowestPort  = 20000
	minReserved = 1000
)

// ephemeralRange is where Linux keeps the range of ports it gives a socket
// bound to port 0, or a connection's local end.
const ephemeralRange = "/proc/sys/net/ipv4/ip_local_port_range"

// handedOut remembers the ports given to processes of this program, and
// holds the lock of each (see reserve), so that two federations never
// receive the same port, nor another program of this user that locks them
// too (another test binary of `go test ./...`).
var handedOut = struct {
	sync.Mutex
	ports map[int]*os.File
}{ports: map[int]*os.File{}}

// freePort returns a free port on 127.0.0.1 for a kube-apiserver. Where the
// kernel says which ports it hands out itself (Linux), the port lies below
// that range: no program asking for any free port, and no outgoing
// connection, is ever given it, so a restarted kube-apiserver finds its port
// again even when other test beds and servers start meanwhile. It is
// reserved for this program's lifetime by a lock file that other programs
// using localfed respect. Elsewhere it asks the kernel for any free port.
// Either way the port is released until the kube-apiserver binds it: a
// program binding that very port may take it first, and Cluster.serve then
// starts the kube-apiserver again.
func freePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	low, err := ephemeralLow()
	if err != nil || low-lowestPort < minReserved {
		return kernelPort()
	}
	for range 100 {
		port := lowestPort + rand.IntN(low-lowestPort)
		if _, taken := handedOut.ports[port]; taken {
			continue
		}
		lock, err := reserve(port)
		if err != nil {
			return 0, err
		}
		if lock == nil {
			continue
		}
		if !isFree(port) {
			_ = lock.Close()
			continue
		}
		handedOut.ports[port] = lock
		return port, nil
	}
	return 0, fmt.Errorf("finding a free port: 100 ports in %d-%d were taken or reserved", lowestPort, low-1)
}

// kernelPort asks the kernel for a free port, one not handed out before.
func kernelPort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if err := l.Close(); err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		if _, taken := handedOut.ports[port]; !taken {
			handedOut.ports[port] = nil
			return port, nil
		}
	}
	return 0, fmt.Errorf("finding a free port: the kernel keeps offering ports already handed out")
}

// ephemeralLow returns the lowest port of the kernel's ephemeral range.
func ephemeralLow() (int, error) {
	data, err := os.ReadFile(ephemeralRange)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) != 2 {
		return 0, fmt.Errorf("%s: %q is not two ports", ephemeralRange, data)
	}
	return strconv.Atoi(fields[0])
}

// reserve locks port for this program: it returns the open lock file, or
// nil when another program (or this one) holds the lock. The lock goes
// when the program ends.
func reserve(port int) (*os.File, error) {
	dir := filepath.Join(os.TempDir(), "localfed-ports-"+strconv.Itoa(os.Getuid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("reserving a port: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("reserving port %d: %w", port, err)
	}
	locked, err := tryLock(f)
	if err != nil || !locked {
		_ = f.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("reserving port %d: %w", port, err)
	}
	if !locked {
		return nil, nil
	}
	return f, nil
}

// isFree tells whether port can be listened on at 127.0.0.1 now.
func isFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	return l.Close() == nil
}
