package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// loadSlack is how much longer than its settings allow a step may take on
// a loaded machine (two cores shared with other work). The waits end as soon
// as the state is seen: only a failing test waits this long.
const loadSlack = time.Minute

// settleWithin bounds the waits for a state the controller reaches in a
// sync or a few (a CPV's versions, an entry, an Event, a condition): a
// shared controller busy with every test's resources, and requeued by other
// tests' clusters joining and leaving, may take longer than a quiet one.
const settleWithin = 30*time.Second + loadSlack

// probeSettings are the health-probe flags of a controller-manager the
// tests run. Each test bed chooses its own; the tests derive their waits
// from the settings of the controller-manager they run against.
type probeSettings struct {
	period, timeout  time.Duration
	failureThreshold int
}

var (
	// steadyProbes are the shared test bed's: a probe may take ten seconds
	// and six must fail in a row, so that members starved of CPU for half a
	// minute stay Ready and the steady-state tests see no flapping. A new
	// cluster still gets its first verdict at once.
	steadyProbes = probeSettings{period: 2 * time.Second, timeout: 10 * time.Second, failureThreshold: 6}
	// quickProbes are for the test beds that stop a member and wait for it
	// to go Offline: three failed probes, two seconds apart. A stopped
	// kube-apiserver refuses connections at once, so the long timeout does
	// not slow that down; it only keeps a slow answer from counting as a
	// failure.
	quickProbes = probeSettings{period: 2 * time.Second, timeout: 10 * time.Second, failureThreshold: 3}
)

// probesWithin is how long n probes in a row may take, each after a period
// and up to the timeout, plus loadSlack: a bound for waiting on a verdict
// that takes n probes.
func (p probeSettings) probesWithin(n int) time.Duration {
	return time.Duration(n)*(p.period+p.timeout) + loadSlack
}

// failedWithin is how long a Ready cluster whose probes start failing may
// take to be marked not Ready: the failure threshold's probes.
func (p probeSettings) failedWithin() time.Duration { return p.probesWithin(p.failureThreshold) }

// fedtest returns the settings for fedtest.StartControllerManager, with
// more flags.
func (p probeSettings) fedtest(args ...string) fedtest.Settings {
	return fedtest.Settings{ProbePeriod: p.period, ProbeTimeout: p.timeout, FailureThreshold: p.failureThreshold, Args: args}
}

// fedwardenBin is the fedwarden binary built for this test run.
var fedwardenBin string

// buildFedwarden builds ./cmd/fedwarden into dir.
func buildFedwarden(dir string) (string, error) { return fedtest.Build(dir) }

// result is what one run of the CLI printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fedtest.Result{Stdout: r.stdout, Stderr: r.stderr, Code: r.code}.String()
}

// runFedwarden runs the CLI with args and returns what it printed.
func runFedwarden(t *testing.T, args ...string) result {
	t.Helper()
	return runFedwardenContext(t.Context(), t, args...)
}

// runFedwardenContext is runFedwarden for cleanups, which run after the
// test's context has ended.
func runFedwardenContext(ctx context.Context, t *testing.T, args ...string) result {
	t.Helper()
	r, err := fedtest.Run(ctx, fedwardenBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return result{stdout: r.Stdout, stderr: r.Stderr, code: r.Code}
}

// joinArgs are the arguments that join the local member m to f's host as name.
func joinArgs(f *localfed.Federation, m *localfed.Cluster, name string, extra ...string) []string {
	return fedtest.JoinArgs(f, m, name, extra...)
}

// unjoinArgs are the arguments that unjoin name, the local member m.
func unjoinArgs(f *localfed.Federation, m *localfed.Cluster, name string, extra ...string) []string {
	return append([]string{"unjoin", name,
		"--host-kubeconfig", f.Host.Kubeconfig,
		"--cluster-kubeconfig", m.Kubeconfig,
	}, extra...)
}

// controllerManager is a `fedwarden controller-manager` process.
type controllerManager struct {
	*fedtest.ControllerManager
	logPath string
	// probes are its health-probe settings.
	probes probeSettings
	// stopped is set once stop was called.
	stopped bool
}

// startBed starts a bed of the test's own (fedtest.StartBed) with the
// federation options, stopped when the test ends.
func startBed(t *testing.T, opts ...localfed.Option) *fedtest.Bed {
	t.Helper()
	return fedtest.StartBed(t, fedtest.Options{Bin: fedwardenBin, Federation: opts})
}

// startControllerManager runs a controller-manager on bed with the probe
// settings and more flags; the bed stops it when the test ends.
func startControllerManager(t *testing.T, bed *fedtest.Bed, probes probeSettings, args ...string) *controllerManager {
	t.Helper()
	cm := bed.StartControllerManager(t, probes.fedtest(args...))
	return &controllerManager{ControllerManager: cm, logPath: cm.LogPath, probes: probes}
}

// startJoinedBed starts a bed of the test's own with o, a controller-manager
// with the probe settings and more flags, and every member joined.
func startJoinedBed(t *testing.T, o fedtest.Options, probes probeSettings, args ...string) (*fedtest.Bed, *controllerManager) {
	t.Helper()
	s := probes.fedtest(args...)
	o.Bin, o.ControllerManager, o.Join = fedwardenBin, &s, true
	b := fedtest.StartBed(t, o)
	return b, &controllerManager{ControllerManager: b.CM, logPath: b.CM.LogPath, probes: probes}
}

// adoptingControllerManager runs a controller-manager on f, logging to
// dir, with the flags a migration's plan gives: a test that checks its
// stop stops it, and its cleanup stops it otherwise, without a verdict.
func adoptingControllerManager(t *testing.T, f *localfed.Federation, dir string, args []string) *controllerManager {
	t.Helper()
	started, err := fedtest.StartControllerManager(fedwardenBin, f, dir, steadyProbes.fedtest(args...))
	if err != nil {
		t.Fatal(err)
	}
	cm := &controllerManager{ControllerManager: started, logPath: started.LogPath, probes: steadyProbes}
	t.Cleanup(func() {
		if !cm.stopped {
			_ = cm.stop()
		}
		if t.Failed() {
			dumpLog(cm.logPath)
		}
	})
	return cm
}

// stop ends the controller-manager.
func (cm *controllerManager) stop() error {
	cm.stopped = true
	return cm.Stop()
}

// metric returns the value of the series `name{labels}` the
// controller-manager exports, and whether it exists.
func (cm *controllerManager) metric(t *testing.T, series string) (float64, bool) {
	t.Helper()
	v, ok, err := cm.Metric(t.Context(), series)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) { return fedtest.FreePort() }

// unstructuredSlice returns the list at path in obj.
func unstructuredSlice(obj map[string]any, path ...string) ([]any, bool, error) {
	return unstructured.NestedSlice(obj, path...)
}

// setNested sets the value at path in obj, failing the test on error.
func setNested(t *testing.T, obj map[string]any, value any, path ...string) {
	t.Helper()
	if err := unstructured.SetNestedField(obj, value, path...); err != nil {
		t.Fatalf("setting %v: %v", path, err)
	}
}
