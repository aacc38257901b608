package e2e

import (
	"context"
	"flag"
	"fmt"
	"github.com/go-logr/logr"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// resyncPeriod is the shared test bed's --resync-period.
const resyncPeriod = 5 * time.Second

// memberListTimeout is the shared test bed's --member-list-timeout: long,
// so that a test can tell an answer that comes at once from one that waits
// for it, with room for a loaded machine.
const memberListTimeout = 2 * time.Minute

// fed is the test bed shared by the tests of this package: a host and two
// members, and cm, a controller-manager working on it. Tests that stop or
// restart a cluster start a test bed of their own.
var (
	fed *localfed.Federation
	cm  *controllerManager
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if err := setParallel(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The test's own clients log through controller-runtime; the
	// controller-manager's logs are in its own file.
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() {
		// No test bed: every test skips itself (skipInShortMode), and says
		// so with -v.
		fmt.Fprintln(os.Stderr, shortModeReason)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "fedwarden-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a work directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if fedwardenBin, err = buildFedwarden(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	startLeakScan(dir)
	fed, err = localfed.Start(context.Background(), localfed.WithMembers(2))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local federation: %v\n", err)
		return 1
	}
	// A short resync period, so that the steady-state tests see periodic
	// resyncs (which must write nothing).
	shared, err := fedtest.StartControllerManager(fedwardenBin, fed, dir, steadyProbes.fedtest("--propagate-dependencies", "--resync-period", resyncPeriod.String(), "--member-list-timeout", memberListTimeout.String()))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return stopFederation(1)
	}
	cm = &controllerManager{ControllerManager: shared, logPath: shared.LogPath, probes: steadyProbes}
	code := m.Run()
	// The controller-manager's Stop fails when it did not stop cleanly, or
	// did something no test may make it do (such as dialing a member
	// outside loopback): that fails the run, even if every test passed.
	if err := cm.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: stopping the shared test bed's controller-manager: %v\n", err)
		code = 1
	}
	if code != 0 {
		dumpLog(cm.logPath)
	}
	// Every test has ended and every controller-manager stopped: look for
	// secrets where none may be, while the shared bed still runs. After the
	// log's dump: a leak alone does not print the log that holds it.
	if checkNoSecretLeaves() != 0 {
		code = 1
	}
	return stopFederation(code)
}

// stopFederation stops the shared test bed and returns code, or 1 if the
// bed did not stop cleanly.
func stopFederation(code int) int {
	if err := fed.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		return 1
	}
	return code
}

// shortModeReason says why the tests of this package skip in -short mode.
const shortModeReason = "skipped in -short mode: the end-to-end tests start kube-apiservers and take minutes; " +
	"run go test without -short to run them (make test-unit passes -short to leave them out)"

// skipInShortMode skips the test in -short mode, in which TestMain starts
// no test bed. Every test of this package calls it first.
func skipInShortMode(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip(shortModeReason)
	}
}

// dumpLog copies the tail of a log to stderr, for a failed run.
func dumpLog(path string) {
	fmt.Fprintf(os.Stderr, "--- last lines of %s ---\n%s\n", filepath.Base(path), fedtest.Tail(path))
}

// hostClient returns a client of the host cluster that reads and writes
// unstructured objects of any kind the host serves.
func hostClient(t *testing.T) client.Client {
	t.Helper()
	// Tests that reach the shared test bed only through here skip in
	// -short mode even if they do not call skipInShortMode first.
	skipInShortMode(t)
	return newClient(t, fed.Host.Config)
}

// newClient returns a client for cfg that knows fedtest.Scheme's types,
// and any other kind as unstructured.
func newClient(t *testing.T, cfg *rest.Config) client.Client { return fedtest.MustClient(t, cfg) }

// buildClient is newClient for code that has no test to fail.
func buildClient(cfg *rest.Config) (client.Client, error) { return fedtest.NewClient(cfg) }

func discoveryClient(t *testing.T) *discovery.DiscoveryClient {
	t.Helper()
	skipInShortMode(t)
	dc, err := discovery.NewDiscoveryClientForConfig(fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// testNamespace creates a namespace of the host for one test and deletes it
// when the test ends.
func testNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}
