package localfed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Client-side rate limits of the configs handed out: generous, since the
// only server is a local one serving tests.
const (
	clientQPS   = 100
	clientBurst = 200
)

// Cluster is one kube-apiserver of a federation, the host or a member.
type Cluster struct {
	// Name is "host" for the host, the member name otherwise.
	Name string
	// Endpoint is the apiserver's URL, https://127.0.0.1:<port>.
	Endpoint string
	// CAData is the PEM of the CA that signed the apiserver's certificate.
	CAData []byte
	// Config holds the admin credentials: a client certificate of the group
	// system:masters; the server is verified with CAData.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the admin credentials,
	// its context named after the cluster.
	Kubeconfig string

	env  *env
	dir  string
	port int
	pki  *clusterPKI
	proc atomic.Pointer[process] // the latest kube-apiserver started
	cm   *process                // kube-controller-manager, if it runs; guarded by opMu

	opMu    sync.Mutex // serialises Stop, Kill, Restart and the federation's Stop
	stopped bool       // set by Federation.Stop; guarded by opMu
}

// startCluster prepares the cluster called name in a directory under root
// and starts its kube-apiserver on a free port.
func startCluster(ctx context.Context, e *env, root, name string, resume bool) (*Cluster, error) {
	c := &Cluster{Name: name, env: e, dir: filepath.Join(root, name)}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating directory of %s: %w", name, err)
	}
	var err error
	if resume {
		if c.pki, err = readClusterPKI(c.dir); err != nil {
			return nil, fmt.Errorf("reading the certificates of %s: %w", name, err)
		}
	} else {
		if c.pki, err = newClusterPKI(name); err != nil {
			return nil, fmt.Errorf("generating certificates of %s: %w", name, err)
		}
		if err := c.pki.write(c.dir); err != nil {
			return nil, fmt.Errorf("writing certificates of %s: %w", name, err)
		}
	}
	c.CAData = c.pki.servingCA.certPEM
	return c, c.serve(ctx, true)
}

// serve starts the kube-apiserver and waits until it is ready, then the
// controller-manager if it does not run. When the port turns out to be
// taken (the kube-apiserver exits with "address already in use"), it tries
// again, bindAttempts times in all: on a new port when rebind is set (a new
// cluster), else on the same port after a pause (a restart, whose clients
// know the port).
func (c *Cluster) serve(ctx context.Context, rebind bool) error {
	for attempt := 1; ; attempt++ {
		if rebind {
			if err := c.bind(); err != nil {
				return err
			}
		}
		err := c.launch(ctx)
		if err == nil {
			return c.startControllerManager(ctx)
		}
		if !errors.Is(err, errAddrInUse) {
			return err
		}
		if attempt == bindAttempts && rebind {
			return fmt.Errorf("%d free ports in a row were taken by other programs before kube-apiserver %s could bind them: %w", bindAttempts, c.Name, err)
		}
		if attempt == bindAttempts {
			return fmt.Errorf("port %d of kube-apiserver %s stayed taken by another program for %d attempts: %w", c.port, c.Name, bindAttempts, err)
		}
		if rebind {
			continue
		}
		// The port is still held, by a connection of the previous process
		// or by another program: give it time to go.
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(attempt) * time.Second):
		}
	}
}

// bind gives the cluster a new free port, and the endpoint, config and
// kubeconfig that go with it.
func (c *Cluster) bind() error {
	port, err := c.env.pickPort()
	if err != nil {
		return err
	}
	c.port = port
	c.Endpoint = "https://127.0.0.1:" + strconv.Itoa(port)
	if c.Config, err = c.ConfigForUser(adminUser, "system:masters"); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.dir, "kubeconfig")
	return writeKubeconfig(c.Kubeconfig, c.Name, c.Config)
}

// ConfigForUser returns a config authenticating as user in groups, with a
// client certificate signed by the cluster's client CA. Only the admin
// config is bound to any role; give others the permissions a test needs.
func (c *Cluster) ConfigForUser(user string, groups ...string) (*rest.Config, error) {
	certPEM, keyPEM, err := c.pki.clientCA.issueClient(user, groups...)
	if err != nil {
		return nil, fmt.Errorf("issuing a certificate for %s: %w", user, err)
	}
	return &rest.Config{
		Host:  c.Endpoint,
		QPS:   clientQPS,
		Burst: clientBurst,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.CAData,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
	}, nil
}

// Client returns a clientset with the admin credentials.
func (c *Cluster) Client() (kubernetes.Interface, error) {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("creating client of %s: %w", c.Name, err)
	}
	return client, nil
}

// Running reports whether the cluster's kube-apiserver process is running.
func (c *Cluster) Running() bool {
	p := c.proc.Load()
	return p != nil && !p.exited()
}

// Stop stops the kube-apiserver with SIGTERM and waits until it has exited.
// If ctx ends first, Stop kills it and returns an error. The cluster's
// kube-controller-manager keeps running and reconnects after Restart, as it
// would in a real control plane.
func (c *Cluster) Stop(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if p := c.proc.Load(); p != nil {
		return p.stop(ctx)
	}
	return nil
}

// Kill kills the kube-apiserver with SIGKILL, as in a crash, and waits until
// it has exited. Like Stop, it leaves kube-controller-manager running.
func (c *Cluster) Kill() error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if p := c.proc.Load(); p != nil {
		return p.kill()
	}
	return nil
}

// Freeze stops the kube-apiserver with SIGSTOP, as a hung server: its port
// still accepts connections, and nothing answers on them until Thaw. Stop,
// Restart and the federation's Stop thaw it first.
func (c *Cluster) Freeze() error {
	return c.signalAPIServer(freezeSignal, "freezing")
}

// Thaw continues a kube-apiserver frozen by Freeze with SIGCONT.
func (c *Cluster) Thaw() error {
	return c.signalAPIServer(thawSignal, "thawing")
}

func (c *Cluster) signalAPIServer(sig syscall.Signal, doing string) error {
	if !canFreeze {
		return fmt.Errorf("%s %s: processes cannot be stopped by a signal on this system", doing, c.Name)
	}
	c.opMu.Lock()
	defer c.opMu.Unlock()
	p := c.proc.Load()
	if p == nil || p.exited() {
		return fmt.Errorf("%s %s: its kube-apiserver is not running", doing, c.Name)
	}
	if err := p.signal(sig); err != nil {
		return fmt.Errorf("%s %s: %w", doing, c.Name, err)
	}
	return nil
}

// Restart stops the kube-apiserver if it runs, then starts it again on the
// same port, with the same certificates and data, and waits until it is
// ready; it also starts kube-controller-manager again if that has exited.
// It fails once the federation has been stopped.
func (c *Cluster) Restart(ctx context.Context) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	if c.stopped {
		return fmt.Errorf("restarting %s: the federation is stopped", c.Name)
	}
	if p := c.proc.Load(); p != nil {
		if err := p.stop(ctx); err != nil {
			return fmt.Errorf("restarting %s: %w", c.Name, err)
		}
	}
	if err := c.serve(ctx, false); err != nil {
		return fmt.Errorf("restarting %s: %w", c.Name, err)
	}
	return nil
}

// shutdown stops the controller-manager and the kube-apiserver for good,
// killing them after grace.
func (c *Cluster) shutdown(grace time.Duration) error {
	c.opMu.Lock()
	defer c.opMu.Unlock()
	c.stopped = true
	var errs []error
	if c.cm != nil {
		errs = append(errs, c.cm.terminate(grace))
	}
	if p := c.proc.Load(); p != nil {
		errs = append(errs, p.terminate(grace))
	}
	return errors.Join(errs...)
}
