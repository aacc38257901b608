package up

import (
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
	"sync"
	"syscall"
	"time"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// bringer brings a local federation up and down, saying what it does.
type bringer struct {
	out  io.Writer
	self string // the fedwarden binary, run for join, enable and controller-manager
	dir  string
	opts *options

	fed        *localfed.Federation
	cm         *exec.Cmd
	cmDone     chan struct{}
	metricsURL string
	started    time.Time
}

// enabled are the kinds up federates.
var enabled = []string{"namespaces", "deployments.apps", "configmaps", "secrets", "services"}

// up runs the steps in order, each with its progress line.
func (b *bringer) up(ctx context.Context) error {
	b.started = time.Now()
	if err := os.WriteFile(filepath.Join(b.dir, markerFile), []byte("made by fedwarden up; emptied by the next run\n"), 0o600); err != nil {
		return fmt.Errorf("marking the data directory: %w", err)
	}
	steps := []struct {
		what string
		do   func(context.Context) error
	}{
		{fmt.Sprintf("start a host and %d member clusters", b.opts.members), b.startClusters},
		{"start the controller-manager", b.startControllerManager},
		{"join the members", b.joinMembers},
		{"enable " + strings.Join(enabled, ", "), b.enableKinds},
	}
	if b.opts.withSamples {
		steps = append(steps, struct {
			what string
			do   func(context.Context) error
		}{"apply the samples and wait until they are in every member", b.applySamples})
	}
	for _, s := range steps {
		fmt.Fprintf(b.out, "• %s…", s.what)
		start := time.Now()
		if err := s.do(ctx); err != nil {
			fmt.Fprintln(b.out, " failed")
			return err
		}
		fmt.Fprintf(b.out, " done (%.1fs)\n", time.Since(start).Seconds())
	}
	return nil
}

func (b *bringer) startClusters(ctx context.Context) error {
	opts := []localfed.Option{localfed.WithMembers(b.opts.members), localfed.WithDataDir(filepath.Join(b.dir, "clusters"))}
	if b.opts.binDir != "" {
		opts = append(opts, localfed.WithBinDir(b.opts.binDir))
	}
	f, err := localfed.Start(ctx, opts...)
	if err != nil {
		return err
	}
	b.fed = f
	return nil
}

// startControllerManager runs `fedwarden controller-manager` against the
// host, logging to a file, and waits until it is ready.
func (b *bringer) startControllerManager(ctx context.Context) error {
	metrics, err := freePort()
	if err != nil {
		return err
	}
	probes, err := freePort()
	if err != nil {
		return err
	}
	logPath := filepath.Join(b.dir, "controller-manager.log")
	log, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating the controller-manager log: %w", err)
	}
	cmd := exec.Command(b.self, "controller-manager", "--kubeconfig", b.fed.Host.Kubeconfig,
		"--metrics-bind-address", "127.0.0.1:"+strconv.Itoa(metrics),
		"--health-probe-bind-address", "127.0.0.1:"+strconv.Itoa(probes))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("starting the controller-manager: %w", err)
	}
	b.cm, b.cmDone = cmd, make(chan struct{})
	b.metricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics)
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(b.cmDone)
	}()
	return b.waitReady(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", probes), logPath)
}

// waitReady polls url until it answers 200, the process ends, or ctx does.
func (b *bringer) waitReady(ctx context.Context, url, logPath string) error {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-b.cmDone:
			return fmt.Errorf("the controller-manager exited; see %s", logPath)
		case <-ctx.Done():
			return fmt.Errorf("waiting for the controller-manager to be ready (see %s): %w", logPath, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// joinMembers joins every member at once, each in its region.
func (b *bringer) joinMembers(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(b.fed.Members))
	for i, m := range b.fed.Members {
		wg.Go(func() {
			errs[i] = b.fedwarden(ctx, "join-"+m.Name, "join", m.Name,
				"--host-kubeconfig", b.fed.Host.Kubeconfig, "--cluster-kubeconfig", m.Kubeconfig,
				"--region", regions[i], "--label", "env=dev")
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (b *bringer) enableKinds(ctx context.Context) error {
	for _, kind := range enabled {
		if err := b.fedwarden(ctx, "enable-"+kind, "enable", kind, "--host-kubeconfig", b.fed.Host.Kubeconfig); err != nil {
			return err
		}
	}
	return nil
}

// fedwarden runs this binary with args, its output in <dir>/<name>.log.
func (b *bringer) fedwarden(ctx context.Context, name string, args ...string) error {
	logPath := filepath.Join(b.dir, name+".log")
	out, err := exec.CommandContext(ctx, b.self, args...).CombinedOutput()
	_ = os.WriteFile(logPath, out, 0o600)
	if err != nil {
		return fmt.Errorf("fedwarden %s: %w: %s", strings.Join(args[:2], " "), err, lastLine(out))
	}
	return nil
}

func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// down stops the controller-manager (SIGTERM, then SIGKILL after 15 s) and
// the clusters.
func (b *bringer) down() error {
	var errs []error
	if b.cm != nil {
		_ = b.cm.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.cmDone:
		case <-time.After(15 * time.Second):
			_ = b.cm.Process.Kill()
			<-b.cmDone
		}
	}
	if b.fed != nil {
		if err := b.fed.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("stopping the clusters: %w", err))
		}
	}
	return errors.Join(errs...)
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
