package fedtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// KWOK runs simulated Nodes in a member cluster: KWOK's controller
// (sigs.k8s.io/kwok, bin/kwok) works on the member's kube-apiserver with
// its admin kubeconfig and plays KWOK's default Stages (bin/kwok-stages.yaml,
// the ones kwokctl uses): the Node becomes Ready and keeps a Lease, and each
// Pod bound to it becomes Running and Ready at once, Completed for a Job's,
// and is removed when deleted. No container runs and no kubelet is
// contacted.
//
// localfed runs no kube-scheduler: a Pod runs only when its spec names the
// Node (spec.nodeName: KWOKNodeName), as a Deployment's template can.
type KWOK struct {
	// Node is the name of the simulated Node.
	Node string
	// LogPath is the KWOK controller's log.
	LogPath string

	cluster *localfed.Cluster
	client  kubernetes.Interface
	cmd     *exec.Cmd
	done    chan struct{}
}

// KWOKNodeName is the name of the Node StartKWOK creates.
const KWOKNodeName = "kwok-node"

// kwokNodeAnnotation marks the Nodes the KWOK controller manages
// (--manage-nodes-with-annotation-selector), as KWOK's documentation does.
const kwokNodeAnnotation = "kwok.x-k8s.io/node"

// Addresses KWOK writes into the Node's and the Pods' status. Nothing dials
// them (no kubelet, no kube-proxy), but they stay in 127.0.0.0/8 like every
// address in the test beds.
const (
	kwokNodeIP  = "127.0.0.1"
	kwokPodCIDR = "127.128.0.0/16"
)

// KWOKOption configures StartKWOK.
type KWOKOption func(*kwokOptions)

type kwokOptions struct {
	allocatable corev1.ResourceList
	stages      []string
}

// WithKWOKAllocatable sets the Node's capacity and allocatable resources
// (default 32 CPUs, 256 GiB of memory, 110 Pods).
func WithKWOKAllocatable(r corev1.ResourceList) KWOKOption {
	return func(o *kwokOptions) { o.allocatable = r }
}

// WithKWOKStages adds KWOK configuration files, such as Stages that fail
// some Pods, to the default Stages.
func WithKWOKStages(paths ...string) KWOKOption {
	return func(o *kwokOptions) { o.stages = append(o.stages, paths...) }
}

// kwokReadyTimeout bounds how long the Node may take to become Ready once
// the controller runs: it does so within a second on an idle machine.
const kwokReadyTimeout = time.Minute

// StartKWOK creates a simulated Node in cluster c and runs KWOK's
// controller for it, with its binary and Stages from the bin directory
// (localfed.BinDir), logging to a file in dir, and waits until the Node is
// Ready. The controller talks only to c's kube-apiserver, which must be on
// a loopback address.
func StartKWOK(ctx context.Context, c *localfed.Cluster, dir string, opts ...KWOKOption) (*KWOK, error) {
	o := kwokOptions{allocatable: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}}
	for _, opt := range opts {
		opt(&o)
	}
	if err := requireLoopback(c.Endpoint); err != nil {
		return nil, err
	}
	binDir, err := localfed.BinDir()
	if err != nil {
		return nil, err
	}
	bin, stages := filepath.Join(binDir, "kwok"), filepath.Join(binDir, "kwok-stages.yaml")
	for _, path := range []string{bin, stages} {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("%w (build it with hack/tools/build.sh kwok kwok-stages)", err)
		}
	}
	client, err := c.Client()
	if err != nil {
		return nil, err
	}
	k := &KWOK{Node: KWOKNodeName, cluster: c, client: client, done: make(chan struct{}),
		LogPath: filepath.Join(dir, "kwok-"+c.Name+".log")}
	if err := k.createNode(ctx, o.allocatable); err != nil {
		return nil, err
	}
	if err := k.start(bin, dir, append([]string{stages}, o.stages...)); err != nil {
		return nil, errors.Join(err, k.deleteNode())
	}
	if err := k.waitNodeReady(ctx); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	return k, nil
}

// RunKWOK is StartKWOK for a test: it fails the test if KWOK does not
// start, and stops it when the test ends (showing the end of its log if
// the test failed).
func RunKWOK(t testing.TB, c *localfed.Cluster, opts ...KWOKOption) *KWOK {
	t.Helper()
	k, err := StartKWOK(t.Context(), c, t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("starting KWOK in %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		if err := k.Stop(); err != nil {
			t.Errorf("stopping KWOK in %s: %v", c.Name, err)
		}
		if t.Failed() {
			t.Logf("KWOK's log in %s ends with:\n%s", c.Name, k.logTail())
		}
	})
	return k
}

// requireLoopback returns an error unless endpoint's host is a loopback IP
// address.
func requireLoopback(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("parsing the endpoint %q: %w", endpoint, err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("KWOK may talk only to a kube-apiserver on a loopback address, not %s", endpoint)
	}
	return nil
}

// createNode creates the simulated Node, marked for KWOK, with the
// resources given.
func (k *KWOK) createNode(ctx context.Context, resources corev1.ResourceList) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        k.Node,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": k.Node,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: resources, Allocatable: resources},
	}
	if _, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the KWOK Node %s in %s: %w", k.Node, k.cluster.Name, err)
	}
	return nil
}

// start runs the KWOK controller with the configuration files given. It
// gets a home directory of its own, so that no ~/.kwok/kwok.yaml of the
// user's is read, and no proxy settings.
func (k *KWOK) start(bin, dir string, configs []string) error {
	logFile, err := os.Create(k.LogPath)
	if err != nil {
		return fmt.Errorf("creating the KWOK log: %w", err)
	}
	home := filepath.Join(dir, "kwok-home-"+k.cluster.Name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		logFile.Close()
		return err
	}
	args := []string{
		"--kubeconfig=" + k.cluster.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--node-ip=" + kwokNodeIP,
		"--cidr=" + kwokPodCIDR,
		"--node-lease-duration-seconds=40",
	}
	for _, c := range configs {
		args = append(args, "--config="+c)
	}
	k.cmd = exec.Command(bin, args...)
	k.cmd.Stdout, k.cmd.Stderr = logFile, logFile
	k.cmd.Env = append(withoutProxies(os.Environ()), "HOME="+home, "NO_PROXY=127.0.0.1")
	k.cmd.SysProcAttr = sysProcAttr()
	if err := k.cmd.Start(); err != nil {
		logFile.Close()
		return fmt.Errorf("starting KWOK: %w", err)
	}
	go func() {
		_ = k.cmd.Wait()
		logFile.Close()
		close(k.done)
	}()
	return nil
}

// waitNodeReady waits until KWOK has made the Node Ready, or its
// controller has exited.
func (k *KWOK) waitNodeReady(ctx context.Context) error {
	deadline := time.Now().Add(kwokReadyTimeout)
	for {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.Node, metav1.GetOptions{})
		if err == nil && nodeReady(node) {
			return nil
		}
		select {
		case <-k.done:
			return fmt.Errorf("KWOK exited before the Node %s was Ready; its log ends with:\n%s", k.Node, k.logTail())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("KWOK did not make the Node %s Ready within %s (last error: %v); its log ends with:\n%s", k.Node, kwokReadyTimeout, err, k.logTail())
		}
	}
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (k *KWOK) logTail() []byte {
	log, _ := os.ReadFile(k.LogPath)
	return log[max(0, len(log)-4096):]
}

// Stop ends the KWOK controller with SIGTERM (SIGKILL after 10 s) and
// deletes its Node, if the cluster still runs: Pods bound to it stay as
// they were. It returns an error when the controller had exited on its own.
func (k *KWOK) Stop() error {
	var err error
	select {
	case <-k.done:
		err = fmt.Errorf("KWOK had exited before it was stopped; its log ends with:\n%s", k.logTail())
	default:
		_ = k.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-k.done:
		case <-time.After(10 * time.Second):
			_ = k.cmd.Process.Kill()
			<-k.done
		}
	}
	if k.cluster.Running() {
		err = errors.Join(err, k.deleteNode())
	}
	return err
}

func (k *KWOK) deleteNode() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := k.client.CoreV1().Nodes().Delete(ctx, k.Node, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the KWOK Node %s of %s: %w", k.Node, k.cluster.Name, err)
	}
	return nil
}
