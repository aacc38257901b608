package up

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// bringer brings a local federation up and down, saying what it does.
type bringer struct {
	out   io.Writer
	self  string // the fedwarden binary, run for join, enable and controller-manager
	typed string // how to type self in a shell here (typedName), for printNext
	dir   string
	opts  *options

	fed        *localfed.Federation
	children   []*child // in the order they started
	metricsURL string   // the controller-manager's
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
	if b.opts.pullMembers > 0 {
		steps = slices.Insert(steps, 3, struct {
			what string
			do   func(context.Context) error
		}{"start the agents of the Pull members", b.startAgents})
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
	// The members are on this machine: the controller-manager contacts no
	// other. A local federation has every feature on, dependencies too.
	c, err := b.startReady(ctx, "controller-manager", "controller-manager", "--kubeconfig", b.fed.Host.Kubeconfig, "--member-networks", egress.Loopback.String(),
		"--propagate-dependencies")
	if err != nil {
		return err
	}
	b.metricsURL = c.metricsURL
	return nil
}

// startAgents runs `fedwarden agent` for every Pull member, as its
// ServiceAccount in the member (join created it), and waits until each is
// ready.
func (b *bringer) startAgents(ctx context.Context) error {
	for _, m := range b.pullMembers() {
		memberKubeconfig := filepath.Join(b.dir, "agent-"+m.Name+"-member.kubeconfig")
		if err := m.WriteServiceAccountKubeconfig(ctx, corev1beta1.DefaultFederationNamespace, registration.AgentMemberServiceAccountName, memberKubeconfig, 24*time.Hour); err != nil {
			return err
		}
		if _, err := b.startReady(ctx, "agent-"+m.Name, "agent", "--cluster-name", m.Name,
			"--host-kubeconfig", b.agentHostKubeconfig(m), "--kubeconfig", memberKubeconfig); err != nil {
			return err
		}
	}
	return nil
}

// pullMembers are the members that join in Pull mode: the last ones.
func (b *bringer) pullMembers() []*localfed.Cluster {
	return b.fed.Members[len(b.fed.Members)-b.opts.pullMembers:]
}

// agentHostKubeconfig is where join writes the kubeconfig of the host of
// Pull member m's agent.
func (b *bringer) agentHostKubeconfig(m *localfed.Cluster) string {
	return filepath.Join(b.dir, "agent-"+m.Name+"-host.kubeconfig")
}

// joinMembers joins every member at once, each in its region.
func (b *bringer) joinMembers(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(b.fed.Members))
	for i, m := range b.fed.Members {
		args := []string{"join", m.Name, "--host-kubeconfig", b.fed.Host.Kubeconfig, "--cluster-kubeconfig", m.Kubeconfig,
			"--region", regions[i], "--label", "env=dev"}
		if i >= len(b.fed.Members)-b.opts.pullMembers {
			// Its agent starts next: the cluster is Ready once it runs.
			args = append(args, "--sync-mode", "Pull", "--agent-kubeconfig", b.agentHostKubeconfig(m), "--wait=false")
		}
		wg.Go(func() { errs[i] = b.fedwarden(ctx, "join-"+m.Name, args...) })
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

// down stops the agents and the controller-manager (SIGTERM, then SIGKILL
// after 15 s), then the clusters.
func (b *bringer) down() error {
	for i := len(b.children) - 1; i >= 0; i-- {
		b.children[i].stop()
	}
	if b.fed != nil {
		if err := b.fed.Stop(); err != nil {
			return fmt.Errorf("stopping the clusters: %w", err)
		}
	}
	return nil
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
