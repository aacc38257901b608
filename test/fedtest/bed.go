package fedtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

// JoinControllers are the kube-controller-manager controllers `fedwarden
// join` needs in a member: they fill in its ServiceAccount's token. A bed
// whose members run only these has nothing but Fedwarden write to them.
var JoinControllers = []string{"serviceaccount-controller", "serviceaccount-token-controller"}

// SteadySettings are the probe settings of a bed whose members stay up: a
// probe every 10 s, which fails after 3 s; three failures in a row make a
// member not Ready.
var SteadySettings = Settings{ProbePeriod: 10 * time.Second, ProbeTimeout: 3 * time.Second, FailureThreshold: 3}

// Options choose what StartBed runs, in this order: the federation, KWOK
// in each member, a controller-manager, the joins, the types.
type Options struct {
	// Federation are localfed's options: the members, their names, the
	// kube-controller-manager controllers, the CRDs.
	Federation []localfed.Option
	// Bin is the fedwarden binary (Build), which ControllerManager, Join,
	// Pull and Enable need; when it is empty and they are asked for,
	// StartBed builds one for the bed.
	Bin string
	// KWOK runs KWOK in every member, with KWOKOptions, so that Pods run
	// and Nodes report.
	KWOK        bool
	KWOKOptions []KWOKOption
	// ControllerManager, when set, runs a controller-manager with these
	// settings before the members join.
	ControllerManager *Settings
	// Join joins every member not named in Pull with `fedwarden join`, in
	// Push mode.
	Join bool
	// Pull names members joined in Pull mode, each with a `fedwarden
	// agent` of its own run with AgentArgs as more flags; the bed waits
	// until the host sees each Ready.
	Pull      []string
	AgentArgs []string
	// Enable are types enabled with `fedwarden enable`, each waited for
	// until its propagation controller runs.
	Enable []string
	// Unthrottled makes the bed's Host and Members clients free of
	// client-side rate limits (see Unthrottled), for tests that write
	// many objects at once.
	Unthrottled bool
}

// Bed is one test's federation: a localfed host and members, admin
// clients of each, and the Fedwarden processes the test asked for. Every
// process and the federation stop when the test ends; the end of each
// process's log is shown when the test failed.
type Bed struct {
	// Fed is the federation: its clusters' kubeconfigs, Kill and Restart.
	Fed *localfed.Federation
	// Host and Members are admin clients of the host and of each member by
	// name (Scheme's types, any other kind as unstructured).
	Host    client.Client
	Members map[string]client.Client
	// CM is the controller-manager started last, nil before one is.
	CM *ControllerManager
	// Agents are the Pull clusters' agents by cluster name, the last
	// started of each.
	Agents map[string]*ControllerManager
	// Types are the FederatedTypeConfigs that Enable enabled, by name, as
	// they were once Running.
	Types map[string]*corev1beta1.FederatedTypeConfig
	// Dir holds the bed's kubeconfigs and process logs.
	Dir string
	// Bin is the fedwarden binary the bed runs.
	Bin string

	agentArgs map[string][]string
	procs     []*ControllerManager
	kwoks     map[string]*KWOK
}

// StartBed starts a bed for t as o says, and stops it when t ends. It
// fails t when anything does not start; stopping fails t when a process
// did not stop cleanly (see ControllerManager.Stop). In -short mode it
// skips t: a bed starts real API servers.
func StartBed(t testing.TB, o Options) *Bed {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real kube-apiservers: skipped in -short mode")
	}
	b := &Bed{Members: map[string]client.Client{}, Agents: map[string]*ControllerManager{},
		Types: map[string]*corev1beta1.FederatedTypeConfig{}, Dir: t.TempDir(), Bin: o.Bin, agentArgs: map[string][]string{}, kwoks: map[string]*KWOK{}}
	if b.Bin == "" && (o.ControllerManager != nil || o.Join || len(o.Pull) > 0 || len(o.Enable) > 0) {
		bin, err := Build(b.Dir)
		if err != nil {
			t.Fatal(err)
		}
		b.Bin = bin
	}
	f, err := StartFederation(t, o.Federation...)
	if err != nil {
		t.Fatalf("starting a test bed: %v", err)
	}
	b.Fed = f
	t.Cleanup(func() { b.stop(t) })
	config := func(c *rest.Config) *rest.Config { return c }
	if o.Unthrottled {
		config = Unthrottled
	}
	b.Host = MustClient(t, config(f.Host.Config))
	for _, m := range f.Members {
		b.Members[m.Name] = MustClient(t, config(m.Config))
		if o.KWOK {
			k, err := StartKWOK(t.Context(), m, t.TempDir(), o.KWOKOptions...)
			if err != nil {
				t.Fatalf("starting KWOK in %s: %v", m.Name, err)
			}
			b.kwoks[m.Name] = k
		}
	}
	if o.ControllerManager != nil {
		b.StartControllerManager(t, *o.ControllerManager)
	}
	for _, m := range f.Members {
		if o.Join && !slices.Contains(o.Pull, m.Name) {
			b.Join(t, m)
		}
	}
	for _, name := range o.Pull {
		b.JoinPull(t, name, o.AgentArgs...)
	}
	for _, kind := range o.Enable {
		b.Enable(t, kind)
	}
	return b
}

// StartFederation is localfed.Start for one test, in turn with the
// other starts of the test binary (StartSlot). It logs how long the start
// took, and how long it waited for its turn. The caller stops the
// federation.
func StartFederation(t testing.TB, opts ...localfed.Option) (*localfed.Federation, error) {
	t.Helper()
	asked := time.Now()
	done, err := StartSlot(t.Context())
	if err != nil {
		return nil, err
	}
	defer done()
	began := time.Now()
	f, err := localfed.Start(t.Context(), opts...)
	if err == nil {
		t.Logf("test bed started in %s, after waiting %s for a turn", time.Since(began).Round(time.Millisecond), began.Sub(asked).Round(time.Millisecond))
	}
	return f, err
}

// MaxStarts is how many kube-apiserver starts (a bed, a member added, a
// cluster restarted) one test binary runs at once. Starting one is the most
// CPU-hungry thing the tests do; with many tests running at once,
// unbounded starts on 2 busy cores could keep a kube-apiserver from
// becoming ready within localfed's start timeout. A cluster that is up runs
// beside any number of others.
const MaxStarts = 2

// starts holds a token per start in progress.
var starts = make(chan struct{}, MaxStarts)

// StartSlot waits for a start to be allowed (MaxStarts) and returns the
// function that ends it; it returns an error if ctx ends first.
func StartSlot(ctx context.Context) (done func(), err error) {
	select {
	case starts <- struct{}{}:
		return func() { <-starts }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a turn to start a kube-apiserver: %w", ctx.Err())
	}
}

// RestartCluster is c.Restart in turn with the other starts (StartSlot).
func RestartCluster(t testing.TB, c *localfed.Cluster) error {
	t.Helper()
	done, err := StartSlot(t.Context())
	if err != nil {
		return err
	}
	defer done()
	return c.Restart(t.Context())
}

// StartControllerManager runs a controller-manager on the bed with s, and
// makes it the bed's CM. The bed stops it when the test ends, unless the
// test did.
func (b *Bed) StartControllerManager(t testing.TB, s Settings) *ControllerManager {
	t.Helper()
	cm, err := StartControllerManager(b.Bin, b.Fed, b.Dir, s)
	if err != nil {
		t.Fatal(err)
	}
	b.CM = cm
	b.procs = append(b.procs, cm)
	return cm
}

// Run runs the CLI with args, failing t only when it cannot run.
func (b *Bed) Run(t testing.TB, args ...string) Result {
	t.Helper()
	r, err := Run(t.Context(), b.Bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Join joins member m to the host in Push mode under its own name, with
// more flags, and fails t when `fedwarden join` fails.
func (b *Bed) Join(t testing.TB, m *localfed.Cluster, extra ...string) {
	t.Helper()
	if r := b.Run(t, JoinArgs(b.Fed, m, m.Name, extra...)...); r.Code != 0 {
		t.Fatalf("joining %s failed:\n%s", m.Name, r)
	}
}

// JoinPull joins member name in Pull mode and starts its agent (StartAgent)
// with more flags.
func (b *Bed) JoinPull(t testing.TB, name string, agentArgs ...string) *ControllerManager {
	t.Helper()
	m := b.Fed.Member(name)
	if m == nil {
		t.Fatalf("the bed has no member %s to join in Pull mode", name)
	}
	agentHost := b.AgentHostKubeconfig(name)
	if r := b.Run(t, JoinArgs(b.Fed, m, name, "--sync-mode", "Pull", "--agent-kubeconfig", agentHost, "--wait=false")...); r.Code != 0 {
		t.Fatalf("joining %s in Pull mode failed:\n%s", name, r)
	}
	agentMember := filepath.Join(b.Dir, name+"-agent-member.kubeconfig")
	if err := WriteAgentMemberKubeconfig(t.Context(), m, agentMember); err != nil {
		t.Fatal(err)
	}
	b.agentArgs[name] = append([]string{"--cluster-name", name, "--host-kubeconfig", agentHost, "--kubeconfig", agentMember}, agentArgs...)
	return b.StartAgent(t, name)
}

// AgentHostKubeconfig is the path of the kubeconfig of the host that
// `fedwarden join --sync-mode Pull` wrote for the agent of cluster name.
func (b *Bed) AgentHostKubeconfig(name string) string {
	return filepath.Join(b.Dir, name+"-agent-host.kubeconfig")
}

// StartAgent starts the agent of Pull cluster name (joined by JoinPull),
// again with the same flags after a test stopped it, and more flags, kept
// for later starts too; it waits until the host sees the cluster Ready
// from the agent's Lease.
func (b *Bed) StartAgent(t testing.TB, name string, more ...string) *ControllerManager {
	t.Helper()
	b.agentArgs[name] = append(b.agentArgs[name], more...)
	agent, err := StartAgent(b.Bin, b.Dir, b.agentArgs[name]...)
	if err != nil {
		t.Fatal(err)
	}
	b.Agents[name] = agent
	b.procs = append(b.procs, agent)
	poll.Eventually(t, 2*time.Minute, name+" to be Ready from its agent's Lease", func(ctx context.Context) (bool, string) {
		fc := &corev1beta1.FederatedCluster{}
		if err := b.Host.Get(ctx, client.ObjectKey{Name: name}, fc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
		return c != nil && c.Status == "True" && c.Reason == corev1beta1.ReasonAgentRenewing, fmt.Sprintf("%+v", fc.Status.Conditions)
	})
	return agent
}

// Enable enables kind with `fedwarden enable` and waits until its
// propagation controller runs; it returns the FederatedTypeConfig then.
func (b *Bed) Enable(t testing.TB, kind string) *corev1beta1.FederatedTypeConfig {
	t.Helper()
	if r := b.Run(t, "enable", kind, "--host-kubeconfig", b.Fed.Host.Kubeconfig); r.Code != 0 {
		t.Fatalf("enabling %s failed:\n%s", kind, r)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	poll.Eventually(t, 2*time.Minute, kind+" to be Running", func(ctx context.Context) (bool, string) {
		if err := b.Host.Get(ctx, client.ObjectKey{Name: kind}, ftc); err != nil {
			return false, err.Error()
		}
		return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
	})
	b.Types[kind] = ftc
	return ftc
}

// stop stops every process the bed started, newest first, then KWOK,
// then the federation, and shows the end of each log when t failed.
func (b *Bed) stop(t testing.TB) {
	for _, p := range slices.Backward(b.procs) {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	}
	for name, k := range b.kwoks {
		if err := k.Stop(); err != nil {
			t.Errorf("stopping KWOK in %s: %v", name, err)
		}
		if t.Failed() {
			t.Logf("KWOK's log in %s ends with:\n%s", name, k.logTail())
		}
	}
	if t.Failed() {
		for _, p := range b.procs {
			LogTail(t, p.LogPath)
		}
	}
	if err := b.Fed.Stop(); err != nil {
		t.Errorf("stopping the test bed: %v", err)
	}
}

// LogTail logs the end of the log at path (Tail), for a failed test.
func LogTail(t testing.TB, path string) {
	t.Logf("--- last lines of %s ---\n%s", filepath.Base(path), Tail(path))
}

// Tail returns the last 64 KiB of the file at path, or what reading it
// failed with.
func Tail(path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return []byte(err.Error())
	}
	const tail = 64 << 10
	return data[max(0, len(data)-tail):]
}

// Scheme returns a scheme of the core Kubernetes types, CRDs and
// Fedwarden's types: what the bed's clients know.
func Scheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, corev1beta1.AddToScheme, typesv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// NewClient returns a client for cfg that knows Scheme's types, and any
// other kind as unstructured.
func NewClient(cfg *rest.Config) (client.Client, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client of %s: %w", cfg.Host, err)
	}
	return c, nil
}

// MustClient is NewClient for a test, which fails when it does.
func MustClient(t testing.TB, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
