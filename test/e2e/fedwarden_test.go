package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/fedwarden/fedwarden/internal/localfed"
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
func buildFedwarden(dir string) (string, error) {
	bin := filepath.Join(dir, "fedwarden")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/fedwarden/fedwarden/cmd/fedwarden")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building fedwarden: %w\n%s", err, out)
	}
	return bin, nil
}

// result is what one run of the CLI printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
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
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, fedwardenBin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent") // only explicit kubeconfigs
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running fedwarden %v: %v", args, err)
	}
	return r
}

// joinArgs are the arguments that join the local member m to f's host as name.
func joinArgs(f *localfed.Federation, m *localfed.Cluster, name string, extra ...string) []string {
	return append([]string{"join", name,
		"--host-kubeconfig", f.Host.Kubeconfig,
		"--cluster-kubeconfig", m.Kubeconfig,
	}, extra...)
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
	cmd        *exec.Cmd
	done       chan struct{}
	metricsURL string
	logPath    string
}

// startControllerManager runs the controller-manager against f's host with
// the tests' probe settings, logging to a file in dir.
func startControllerManager(f *localfed.Federation, dir string) (*controllerManager, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "controller-manager.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("creating the controller-manager log: %w", err)
	}
	cmd := exec.Command(fedwardenBin, "controller-manager",
		"--kubeconfig", f.Host.Kubeconfig,
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(port),
		"--health-probe-bind-address", "0",
		"--cluster-health-period", probePeriod.String(),
		"--cluster-health-timeout", probeTimeout.String(),
		"--cluster-health-failure-threshold", strconv.Itoa(failureThreshold),
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting the controller-manager: %w", err)
	}
	cm := &controllerManager{cmd: cmd, done: make(chan struct{}), metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), logPath: logPath}
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(cm.done)
	}()
	return cm, nil
}

// stop ends the controller-manager with SIGTERM, killing it after a grace
// period.
func (cm *controllerManager) stop() error {
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-cm.done:
		return nil
	case <-time.After(15 * time.Second):
		_ = cm.cmd.Process.Kill()
		<-cm.done
		return errors.New("the controller-manager ignored SIGTERM for 15s and was killed")
	}
}

// metric returns the value of the series `name{labels}` the
// controller-manager exports, and whether it exists.
func (cm *controllerManager) metric(t *testing.T, series string) (float64, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, cm.metricsURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("scraping %s: %v", cm.metricsURL, err)
	}
	defer resp.Body.Close()
	return findSeries(resp.Body, series)
}

func findSeries(r io.Reader, series string) (float64, bool) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		value, found := strings.CutPrefix(sc.Text(), series+" ")
		if !found {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return v, err == nil
	}
	return 0, false
}

// freePort returns a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

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
