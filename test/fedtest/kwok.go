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
//
// One Node by default; WithKWOKNodes makes several, each with its own
// allocatable resources, for tests that measure what a member holds.
type KWOK struct {
	// Node is the name of the first simulated Node: KWOKNodeName unless
	// WithKWOKNodes names others.
	Node string
	// Nodes are the names of every simulated Node, Node first.
	Nodes []string
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
	nodes       []KWOKNode
	stages      []string
}

// KWOKNode is a simulated Node to create.
type KWOKNode struct {
	// Name of the Node; Pods run on it when their spec.nodeName names it.
	Name string
	// Allocatable is the Node's capacity and allocatable resources; when
	// nil, those of WithKWOKAllocatable or its default.
	Allocatable corev1.ResourceList
}

// WithKWOKAllocatable sets the Node's capacity and allocatable resources
// (default 32 CPUs, 256 GiB of memory, 110 Pods); with WithKWOKNodes, those
// of the Nodes that give none.
func WithKWOKAllocatable(r corev1.ResourceList) KWOKOption {
	return func(o *kwokOptions) { o.allocatable = r }
}

// WithKWOKNodes makes KWOK run these Nodes instead of the one named
// KWOKNodeName: members whose Nodes differ, so that what they can hold
// differs as in real fleets. A Deployment whose template names one Node
// then runs every replica there, as kube-scheduler is not there to spread
// them.
func WithKWOKNodes(nodes ...KWOKNode) KWOKOption {
	return func(o *kwokOptions) { o.nodes = append(o.nodes, nodes...) }
}

// WithKWOKStages adds KWOK configuration files, such as Stages that fail
// some Pods, to the default Stages.
func WithKWOKStages(paths ...string) KWOKOption {
	return func(o *kwokOptions) { o.stages = append(o.stages, paths...) }
}

// kwokReadyTimeout bounds how long the Node may take to become Ready once
// the controller runs: it does so within a second on an idle machine.
const kwokReadyTimeout = time.Minute

// StartKWOK creates the simulated Nodes in cluster c (one, KWOKNodeName,
// unless WithKWOKNodes says otherwise) and runs KWOK's controller for them,
// with its binary and Stages from the bin directory (localfed.BinDir),
// logging to a file in dir, and waits until every Node is Ready. The
// controller talks only to c's kube-apiserver, which must be on a loopback
// address.
func StartKWOK(ctx context.Context, c *localfed.Cluster, dir string, opts ...KWOKOption) (*KWOK, error) {
	o := kwokOptions{allocatable: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}}
	for _, opt := range opts {
		opt(&o)
	}
	nodes, err := o.nodeList()
	if err != nil {
		return nil, err
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
	k := &KWOK{Node: nodes[0].Name, cluster: c, client: client, done: make(chan struct{}),
		LogPath: filepath.Join(dir, "kwok-"+c.Name+".log")}
	for _, n := range nodes {
		// Nodes are recorded as they are created, so that a failure
		// deletes those made so far.
		if err := k.createNode(ctx, n); err != nil {
			return nil, errors.Join(err, k.deleteNodes())
		}
	}
	if err := k.start(bin, dir, append([]string{stages}, o.stages...)); err != nil {
		return nil, errors.Join(err, k.deleteNodes())
	}
	if err := k.waitNodesReady(ctx); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	return k, nil
}

// nodeList is the Nodes to create, each with its allocatable resources:
// those of WithKWOKNodes, else the one named KWOKNodeName.
func (o *kwokOptions) nodeList() ([]KWOKNode, error) {
	if len(o.nodes) == 0 {
		return []KWOKNode{{Name: KWOKNodeName, Allocatable: o.allocatable}}, nil
	}
	out := make([]KWOKNode, 0, len(o.nodes))
	seen := map[string]bool{}
	for _, n := range o.nodes {
		switch {
		case n.Name == "":
			return nil, errors.New("a KWOK Node needs a name")
		case seen[n.Name]:
			return nil, fmt.Errorf("the KWOK Node %s is given twice", n.Name)
		}
		seen[n.Name] = true
		if n.Allocatable == nil {
			n.Allocatable = o.allocatable
		}
		out = append(out, n)
	}
	return out, nil
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

// createNode creates a simulated Node, marked for KWOK, with its
// resources, and adds it to k.Nodes.
func (k *KWOK) createNode(ctx context.Context, n KWOKNode) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        n.Name,
			Annotations: map[string]string{kwokNodeAnnotation: "fake"},
			Labels: map[string]string{
				"kubernetes.io/hostname": n.Name,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
				"type":                   "kwok",
			},
		},
		Status: corev1.NodeStatus{Capacity: n.Allocatable, Allocatable: n.Allocatable},
	}
	if _, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the KWOK Node %s in %s: %w", n.Name, k.cluster.Name, err)
	}
	k.Nodes = append(k.Nodes, n.Name)
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

// waitNodesReady waits until KWOK has made every Node Ready, or its
// controller has exited.
func (k *KWOK) waitNodesReady(ctx context.Context) error {
	deadline := time.Now().Add(kwokReadyTimeout)
	for _, name := range k.Nodes {
		for {
			node, err := k.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err == nil && nodeReady(node) {
				break
			}
			select {
			case <-k.done:
				return fmt.Errorf("KWOK exited before the Node %s was Ready; its log ends with:\n%s", name, k.logTail())
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("KWOK did not make the Node %s Ready within %s (last error: %v); its log ends with:\n%s", name, kwokReadyTimeout, err, k.logTail())
			}
		}
	}
	return nil
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
// deletes its Nodes, if the cluster still runs: Pods bound to it stay as
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
		err = errors.Join(err, k.deleteNodes())
	}
	return err
}

// deleteNodes deletes the Nodes created so far.
func (k *KWOK) deleteNodes() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, name := range k.Nodes {
		err := k.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the KWOK Node %s of %s: %w", name, k.cluster.Name, err))
		}
	}
	return errors.Join(errs...)
}
