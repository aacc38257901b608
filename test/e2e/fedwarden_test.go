package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// Probe settings of the controller-managers the tests run: short, so that
// transitions happen in seconds.
const (
	probePeriod      = 2 * time.Second
	probeTimeout     = 2 * time.Second
	failureThreshold = 3
)

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
}

// startControllerManager runs the controller-manager against f's host with
// the tests' probe settings and more flags, logging to a file in dir.
func startControllerManager(f *localfed.Federation, dir string, args ...string) (*controllerManager, error) {
	cm, err := fedtest.StartControllerManager(fedwardenBin, f, dir, fedtest.Settings{
		ProbePeriod: probePeriod, ProbeTimeout: probeTimeout, FailureThreshold: failureThreshold,
		Args: args,
	})
	if err != nil {
		return nil, err
	}
	return &controllerManager{ControllerManager: cm, logPath: cm.LogPath}, nil
}

// stop ends the controller-manager.
func (cm *controllerManager) stop() error { return cm.Stop() }

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

// eventually polls cond every 200ms until it returns true or timeout
// passes; then it fails the test with what cond last said.
func eventually(t *testing.T, timeout time.Duration, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, state := cond(t.Context())
		if ok {
			return
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("after %s, still waiting for %s; last seen: %s", timeout, what, last)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("test ended while waiting for %s; last seen: %s", what, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

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
