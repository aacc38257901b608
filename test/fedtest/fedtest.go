// Package fedtest runs Fedwarden's own processes for end-to-end tests and
// benchmarks, the way a user runs them: it builds the fedwarden binary,
// starts `fedwarden controller-manager` against a localfed host, and runs
// CLI commands such as `fedwarden join`.
package fedtest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// RaceEnv, set to 1 in the environment, makes Build build the binary with
// the race detector (make test-race): every controller-manager and agent
// the tests start then reports data races in its log, and Stop fails on
// one.
const RaceEnv = "FEDWARDEN_RACE"

// raceReport starts what the race detector prints for each data race.
const raceReport = "WARNING: DATA RACE"

// Build builds ./cmd/fedwarden into dir and returns the binary's path: with
// the race detector when RaceEnv is 1. It is linked without DWARF, which
// no test reads: a share less of the CPU each test package spends on it.
func Build(dir string) (string, error) {
	bin := filepath.Join(dir, "fedwarden")
	args := []string{"build", "-ldflags=-w", "-o", bin}
	if os.Getenv(RaceEnv) == "1" {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/fedwarden/fedwarden/cmd/fedwarden")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building fedwarden: %w\n%s", err, out)
	}
	return bin, nil
}

// Result is what one run of the CLI printed and returned.
type Result struct {
	Stdout, Stderr string
	Code           int
}

func (r Result) String() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs the CLI with args; only kubeconfigs given as flags are used.
func Run(ctx context.Context, bin string, args ...string) (Result, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.Code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("running fedwarden %v: %w", args, err)
	}
	return r, nil
}

// JoinArgs are the arguments that join member m to f's host as name.
func JoinArgs(f *localfed.Federation, m *localfed.Cluster, name string, extra ...string) []string {
	return append([]string{"join", name, "--host-kubeconfig", f.Host.Kubeconfig, "--cluster-kubeconfig", m.Kubeconfig}, extra...)
}

// Settings are the controller-manager's flags that tests choose.
type Settings struct {
	ProbePeriod      time.Duration
	ProbeTimeout     time.Duration
	FailureThreshold int
	// Args are more flags.
	Args []string
	// Env is more of the process's environment (NAME=value), beside the
	// test's own.
	Env []string
}

// ControllerManager is a running `fedwarden controller-manager` (or `fedwarden
// agent`, see StartAgent).
type ControllerManager struct {
	mu       sync.Mutex
	expected []string // clusters refused on purpose (ExpectRefusals)

	cmd        *exec.Cmd
	done       chan struct{}
	MetricsURL string
	LogPath    string

	// release, called once the process has exited, ends what it holds for
	// the leak scanner (ScanForLeaks).
	release     func()
	releaseOnce sync.Once
	released    error
}

// ReplicaName is the name a controller-manager started by
// StartControllerManager gives itself (status.servedBy), unless its
// Settings.Args name another.
const ReplicaName = "fedtest-controller-manager"

// StartControllerManager runs the controller-manager against f's host,
// logging to a file in dir. It may contact only loopback addresses
// (--member-networks): a member endpoint anywhere else is refused before
// any packet is sent, and Stop reports it as an error.
func StartControllerManager(bin string, f *localfed.Federation, dir string, s Settings) (*ControllerManager, error) {
	cm, err := start(bin, dir, "controller-manager", append([]string{"controller-manager",
		"--kubeconfig", f.Host.Kubeconfig,
		"--member-networks", egress.Loopback.String(),
		"--health-probe-bind-address", "0",
		"--cluster-health-period", s.ProbePeriod.String(),
		"--cluster-health-timeout", s.ProbeTimeout.String(),
		"--cluster-health-failure-threshold", strconv.Itoa(s.FailureThreshold),
		"--replica-name", ReplicaName, // a later --replica-name in s.Args wins
	}, s.Args...), s.Env...)
	if err != nil {
		return nil, err
	}
	// The leak scanner watches the clusters the controller-manager works on
	// while it runs.
	unwatch, err := watchFederation(f)
	if err != nil {
		cm.Kill()
		return nil, err
	}
	keep := cm.release
	cm.release = func() {
		keep()
		unwatch()
	}
	return cm, nil
}

// StartAgent runs `fedwarden agent` with args (its cluster name, host
// kubeconfig, credentials…), logging to a file in dir. The agent is a
// process like the controller-manager: Stop, Metric and Sum work the same.
func StartAgent(bin, dir string, args ...string) (*ControllerManager, error) {
	return start(bin, dir, "agent", append([]string{"agent", "--health-probe-bind-address", "0"}, args...))
}

// start runs bin with args, env beside the test's environment, and a
// metrics endpoint on 127.0.0.1, logging to
// dir/<name>-<port>.log, and waits until it serves its metrics. The port was
// free a moment before, but another program (another test binary of
// `go test ./...`) may take it before the process binds it: then the process
// exits with "address already in use" and start runs it again on another
// port, a few times before it gives up.
func start(bin, dir, name string, args []string, env ...string) (*ControllerManager, error) {
	const (
		attempts = 5
		// serving is what controller-runtime logs once it has bound the port.
		serving = "Serving metrics server"
		timeout = 2 * time.Minute
	)
	tail := func(log []byte) []byte { return log[max(0, len(log)-4096):] }
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr := "127.0.0.1:" + strconv.Itoa(port)
		logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", name, port))
		logFile, err := os.Create(logPath)
		if err != nil {
			return nil, fmt.Errorf("creating the %s log: %w", name, err)
		}
		cmd := exec.Command(bin, append(slices.Clone(args), "--metrics-bind-address", addr)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if len(env) > 0 {
			cmd.Env = append(os.Environ(), env...)
		}
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			logFile.Close()
			return nil, fmt.Errorf("starting the %s: %w", name, err)
		}
		cm := &ControllerManager{cmd: cmd, done: make(chan struct{}), MetricsURL: metricsScheme(args) + "://" + addr + "/metrics", LogPath: logPath}
		go func() {
			_ = cmd.Wait()
			logFile.Close()
			close(cm.done)
		}()
		deadline := time.After(timeout)
		for exited := false; !exited; {
			select {
			case <-cm.done: // the whole log is written: read it once more
				exited = true
			case <-deadline:
				cm.Kill()
				log, _ := os.ReadFile(logPath)
				return nil, fmt.Errorf("the %s did not serve metrics on %s within %s; its log %s ends with:\n%s", name, addr, timeout, logPath, tail(log))
			case <-time.After(100 * time.Millisecond):
			}
			if log, _ := os.ReadFile(logPath); bytes.Contains(log, []byte(serving)) {
				cm.scanLog()
				return cm, nil
			}
		}
		log, _ := os.ReadFile(logPath)
		if !bytes.Contains(log, []byte(addr+": bind: address already in use")) {
			return nil, fmt.Errorf("the %s exited before serving metrics on %s; its log %s ends with:\n%s", name, addr, logPath, tail(log))
		}
		if attempt == attempts {
			return nil, fmt.Errorf("the %s could not bind its metrics port: %d free ports in a row were taken by other programs first; its last log %s ends with:\n%s", name, attempts, logPath, tail(log))
		}
	}
}

// metricsScheme is the scheme of the metrics endpoint of a process run with
// args: https with --metrics-secure, whose callers need a token (Metric
// and Sum scrape plain HTTP only); http otherwise, which the test beds use,
// on 127.0.0.1 only.
func metricsScheme(args []string) string {
	if slices.Contains(args, "--metrics-secure") || slices.Contains(args, "--metrics-secure=true") {
		return "https"
	}
	return "http"
}

// Kill ends the process with SIGKILL, as a crash would, and waits for it.
func (cm *ControllerManager) Kill() {
	_ = cm.cmd.Process.Kill()
	<-cm.done
	_ = cm.exited()
}

// scanLog registers the process's log with the leak scanner, if there is
// one: its copy is kept when the process exits, as the test's directory
// goes before the scan.
func (cm *ControllerManager) scanLog() {
	s := scanner()
	if s == nil {
		cm.release = func() {}
		return
	}
	s.AddLog(logName(cm), cm.LogPath)
	cm.release = func() { cm.released = s.Keep(logName(cm)) }
}

// exited ends, once, what the exited process held for the leak scanner,
// and tells whether its log could be kept.
func (cm *ControllerManager) exited() error {
	cm.releaseOnce.Do(func() {
		if cm.release != nil {
			cm.release()
		}
	})
	return cm.released
}

// Stop ends the controller-manager (or agent) with SIGTERM; after 15 s it
// asks for a dump of its goroutines with SIGQUIT and kills it. The error
// then names its log, which ends with the whole dump, and holds the
// goroutines in Fedwarden's code: what blocked the stop may be in a
// library's (a client-go informer did, 2026-12-07), so read the dump. It also
// returns an error when the controller-manager refused to contact an
// address outside loopback (see StartControllerManager), for a cluster that
// ExpectRefusals does not name: some test stored an endpoint that a test
// must never reach.
func (cm *ControllerManager) Stop() error {
	_ = cm.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case <-cm.done:
	case <-time.After(15 * time.Second):
		_ = cm.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-cm.done:
		case <-time.After(5 * time.Second):
			_ = cm.cmd.Process.Kill()
			<-cm.done
		}
		err = fmt.Errorf("the process logging to %s (a controller-manager or agent) ignored SIGTERM for 15s and was killed; "+
			"its log ends with the dump of all its goroutines; those in Fedwarden's code then:\n%s", cm.LogPath, cm.ownGoroutines())
	}
	return errors.Join(err, cm.UnexpectedRefusals(), cm.DataRaces(), cm.exited())
}

// ownGoroutines returns the goroutines of the dump SIGQUIT left at the end
// of the log whose stacks pass through Fedwarden's code, at most 16 KB.
func (cm *ControllerManager) ownGoroutines() string {
	data, err := os.ReadFile(cm.LogPath)
	if err != nil {
		return fmt.Sprintf("(reading the log: %v)", err)
	}
	start := bytes.Index(data, []byte("SIGQUIT: quit"))
	if start < 0 {
		return "(no goroutine dump in the log)"
	}
	var out []byte
	for _, g := range bytes.Split(data[start:], []byte("\n\n")) {
		if bytes.Contains(g, []byte("github.com/fedwarden/fedwarden/internal/")) && len(out)+len(g) < 16<<10 {
			out = append(append(out, g...), "\n\n"...)
		}
	}
	return string(out)
}

// DataRaces returns an error holding the data races the race detector
// reported in the log (a binary built with RaceEnv set), or nil.
func (cm *ControllerManager) DataRaces() error {
	data, err := os.ReadFile(cm.LogPath)
	if err != nil {
		return fmt.Errorf("reading the log to look for data races: %w", err)
	}
	n := bytes.Count(data, []byte(raceReport))
	if n == 0 {
		return nil
	}
	first := data[bytes.Index(data, []byte(raceReport)):]
	if end := bytes.Index(first[1:], []byte("\n==================")); end > 0 {
		first = first[:end+1]
	}
	return fmt.Errorf("the race detector reported %d data race(s) in %s; the first:\n%s", n, cm.LogPath, first)
}

// ExpectRefusals names clusters whose endpoints a test placed outside
// loopback on purpose, to see them refused.
func (cm *ControllerManager) ExpectRefusals(clusters ...string) {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	cm.expected = append(cm.expected, clusters...)
}

// refusedCluster finds the cluster of a refusal in a log line (JSON or
// console encoding).
var refusedCluster = regexp.MustCompile(`"cluster"\s*[:=]\s*"([^"]*)"`)

// UnexpectedRefusals returns an error naming each refusal in the log of a
// cluster ExpectRefusals did not name, or nil.
func (cm *ControllerManager) UnexpectedRefusals() error {
	data, err := os.ReadFile(cm.LogPath)
	if err != nil {
		return fmt.Errorf("reading the log to look for refused connections: %w", err)
	}
	cm.mu.Lock()
	defer cm.mu.Unlock()
	var bad []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, egress.RefusedMessage) {
			continue
		}
		if m := refusedCluster.FindStringSubmatch(line); m != nil && slices.Contains(cm.expected, m[1]) {
			continue
		}
		bad = append(bad, line)
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("a test made the controller-manager try to reach a member outside loopback (refused, nothing was sent); store only 127.0.0.1 endpoints in tests:\n%s", strings.Join(bad, "\n"))
}

// PID is the controller-manager's process id.
func (cm *ControllerManager) PID() int { return cm.cmd.Process.Pid }

// Metric returns the value of the series `name{labels}` it exports, and
// whether it exists.
func (cm *ControllerManager) Metric(ctx context.Context, series string) (float64, bool, error) {
	var (
		value float64
		found bool
	)
	err := cm.scrape(ctx, func(line string) {
		if v, ok := strings.CutPrefix(line, series+" "); ok && !found {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			value, found = f, err == nil
		}
	})
	return value, found, err
}

// Sum returns the sum of metric name over the series whose labels contain
// every one of labels (each `key="value"`), and whether there is one.
func (cm *ControllerManager) Sum(ctx context.Context, name string, labels ...string) (float64, bool, error) {
	var (
		sum   float64
		found bool
	)
	err := cm.scrape(ctx, func(line string) {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			return
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				return
			}
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			sum, found = sum+v, true
		}
	})
	return sum, found, err
}

// SettledSum is Sum once it has stopped moving for a second: a member's
// watch, or a CPV, can show a copy before the controller has counted the
// write that made it. It fails t when the metrics cannot be read.
func (cm *ControllerManager) SettledSum(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	last := -1.0
	for {
		total, _, err := cm.Sum(t.Context(), name, labels...)
		if err != nil {
			t.Fatal(err)
		}
		if total == last {
			return total
		}
		last = total
		time.Sleep(time.Second)
	}
}

// scrape calls each with every line of the metrics endpoint.
func (cm *ControllerManager) scrape(ctx context.Context, each func(line string)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cm.MetricsURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("scraping %s: %w", cm.MetricsURL, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
	return sc.Err()
}

// FreePort returns a port on 127.0.0.1 that was free a moment ago. It is
// released: another program may take it before the caller binds it, so a
// caller that hands it to a process must start the process again on another
// port when it exits with "address already in use", as start does.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ProcessMemory returns a process's resident memory now (VmRSS) and at its
// peak (VmHWM), in KiB.
func ProcessMemory(pid int) (rss, peak int64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			peak = v
		}
	}
	return rss, peak, nil
}

// WriteAgentMemberKubeconfig writes to path a kubeconfig of member as the
// agent's ServiceAccount there, which `fedwarden join --sync-mode Pull`
// created with the member's rules: what a pod of the agent's Deployment
// would use. Its token is valid for an hour.
func WriteAgentMemberKubeconfig(ctx context.Context, member *localfed.Cluster, path string) error {
	ns, name := corev1beta1.DefaultFederationNamespace, registration.AgentMemberServiceAccountName
	if err := member.WriteServiceAccountKubeconfig(ctx, ns, name, path, time.Hour); err != nil {
		return err
	}
	return addMintedToken(path, fmt.Sprintf("ServiceAccount %s/%s of cluster %s (%s)", ns, name, member.Name, member.Endpoint))
}

// Unthrottled returns a copy of cfg without client-side rate limits:
// benchmarks pace themselves.
func Unthrottled(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = 5000, 10000
	return c
}

// Percentile returns the p-th percentile (0 to 1) of d, by the nearest
// rank below.
func Percentile(d []time.Duration, p float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(float64(len(s)-1)*p)]
}
