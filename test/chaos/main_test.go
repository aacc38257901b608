package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// fedwardenBin is the fedwarden binary built for this test run.
var fedwardenBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	// The WriteLogs' watches retry, and say so through klog, while a
	// member is down on purpose.
	klog.SetLogger(logr.Discard())
	if testing.Short() {
		fmt.Fprintln(os.Stderr, shortModeReason)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "fedwarden-chaos-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a work directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if fedwardenBin, err = fedtest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// shortModeReason says why the tests of this package skip in -short mode.
const shortModeReason = "skipped in -short mode: the chaos tests start kube-apiservers, kill processes and take minutes; " +
	"run go test without -short to run them"

// skipInShortMode skips the test in -short mode, in which TestMain builds
// nothing. Every test of this package calls it first.
func skipInShortMode(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip(shortModeReason)
	}
}

// loadSlack is how much longer than its settings allow a step may take on
// a loaded machine (two cores shared with other work). Waits end as soon
// as the state is seen: only a failing test waits this long.
const loadSlack = time.Minute

// probes are the controller-manager's health-probe settings in every bed:
// three failed probes two seconds apart make a member Offline. A stopped
// kube-apiserver refuses connections at once, so the long timeout does not
// slow that down; it only keeps a slow answer on a loaded machine from
// counting as a failure.
var probes = fedtest.Settings{ProbePeriod: 2 * time.Second, ProbeTimeout: 10 * time.Second, FailureThreshold: 3}

// offlineWithin bounds how long a Ready member whose API server stopped
// may take to be marked not Ready: the failure threshold's probes, each
// after a period and up to the timeout, plus loadSlack.
func offlineWithin() time.Duration {
	return time.Duration(probes.FailureThreshold)*(probes.ProbePeriod+probes.ProbeTimeout) + loadSlack
}

// bed is a host, members and a controller-manager of one test, with
// FederatedConfigMaps enabled: the cheapest kind to propagate.
type bed struct {
	*localfed.Federation
	t       *testing.T
	host    client.Client
	members map[string]client.Client
	configs map[string]*rest.Config
	typ     propagation.Type
	cm      *fedtest.ControllerManager
	// dir holds the logs of every controller-manager the test ran, logs.
	dir  string
	logs []string
}

// startBed starts a host and n members, a controller-manager, joins the
// members and enables ConfigMaps. The members run only the controllers
// that join needs: only Fedwarden writes their ConfigMaps.
func startBed(t *testing.T, n int) *bed {
	t.Helper()
	skipInShortMode(t)
	f, err := localfed.Start(t.Context(), localfed.WithMembers(n), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	if err != nil {
		t.Fatalf("starting a test bed: %v", err)
	}
	b := &bed{Federation: f, t: t, dir: t.TempDir(), host: newClient(t, f.Host.Config), members: map[string]client.Client{}, configs: map[string]*rest.Config{}}
	t.Cleanup(func() {
		if b.cm != nil {
			if err := b.cm.Stop(); err != nil {
				t.Error(err)
			}
		}
		if t.Failed() {
			for _, l := range b.logs {
				dumpLog(t, l)
			}
		}
		if err := f.Stop(); err != nil {
			t.Errorf("stopping the test bed: %v", err)
		}
	})
	b.startControllerManager()
	for _, m := range f.Members {
		b.members[m.Name] = newClient(t, m.Config)
		b.configs[m.Name] = fedtest.Unthrottled(m.Config)
		r, err := fedtest.Run(t.Context(), fedwardenBin, fedtest.JoinArgs(f, m, m.Name)...)
		if err != nil || r.Code != 0 {
			t.Fatalf("joining %s failed: %v\n%s", m.Name, err, r)
		}
	}
	if r, err := fedtest.Run(t.Context(), fedwardenBin, "enable", "configmaps", "--host-kubeconfig", f.Host.Kubeconfig); err != nil || r.Code != 0 {
		t.Fatalf("enabling configmaps failed: %v\n%s", err, r)
	}
	ftc := &corev1beta1.FederatedTypeConfig{}
	eventually(t, time.Minute+loadSlack, "configmaps to be Running", func(ctx context.Context) (bool, string) {
		if err := b.host.Get(ctx, client.ObjectKey{Name: "configmaps"}, ftc); err != nil {
			return false, err.Error()
		}
		return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
	})
	b.typ = propagation.TypeFromConfig(ftc)
	return b
}

// startControllerManager starts a controller-manager on the bed; the bed
// stops the last one when the test ends.
func (b *bed) startControllerManager(args ...string) {
	b.t.Helper()
	s := probes
	s.Args = args
	cm, err := fedtest.StartControllerManager(fedwardenBin, b.Federation, b.dir, s)
	if err != nil {
		b.t.Fatal(err)
	}
	b.cm = cm
	b.logs = append(b.logs, cm.LogPath)
}

// namespace creates a namespace of the host for the test.
func (b *bed) namespace(prefix string) string {
	b.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := b.host.Create(b.t.Context(), ns); err != nil {
		b.t.Fatalf("creating a test namespace: %v", err)
	}
	return ns.Name
}

// ledger returns the Ledger of the FederatedConfigMaps of namespace.
func (b *bed) ledger(namespace string) *Ledger {
	return &Ledger{Host: b.host, Members: b.members, Type: b.typ, Namespace: namespace}
}

// watchWrites starts a WriteLog of the ConfigMaps of namespace in every
// member, stopped when the test ends.
func (b *bed) watchWrites(namespace string) *WriteLog {
	b.t.Helper()
	w, err := WatchWrites(b.t.Context(), b.configs, b.typ.TargetResource, namespace)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(w.Stop)
	return w
}

// waitClean waits up to timeout until the ledger of namespace is clean
// and fails the test with the last report otherwise; it returns the clean
// report and how long it took.
func (b *bed) waitClean(l *Ledger, timeout time.Duration) (Report, time.Duration) {
	b.t.Helper()
	return b.waitFor(l, timeout, Report.Clean)
}

func (b *bed) waitFor(l *Ledger, timeout time.Duration, done func(Report) bool) (Report, time.Duration) {
	b.t.Helper()
	start := time.Now()
	var last Report
	eventually(b.t, timeout, "nothing lost, orphaned, at the wrong version or being deleted", func(ctx context.Context) (bool, string) {
		r, err := l.Check(ctx)
		if err != nil {
			return false, err.Error()
		}
		last = r
		if done(r) {
			return true, ""
		}
		return false, r.Err().Error()
	})
	return last, time.Since(start)
}

// newClient returns a client for cfg that knows the core Kubernetes types
// and Fedwarden's, and any other kind as unstructured.
func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, corev1beta1.AddToScheme, typesv1beta1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(fedtest.Unthrottled(cfg), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client of %s: %v", cfg.Host, err)
	}
	return c
}

// eventually polls cond every 200ms until it returns true or timeout
// passes; then it fails the test with what cond last said.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond(t.Context())
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still waiting for %s; last seen: %s", timeout, what, state)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s; last seen: %s", what, state)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// dumpLog logs the tail of a controller-manager's log, for a failed test.
func dumpLog(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	const tail = 32 << 10
	if len(data) > tail {
		data = data[len(data)-tail:]
	}
	t.Logf("--- last lines of %s ---\n%s", filepath.Base(path), data)
}
