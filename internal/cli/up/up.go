// Package up implements `fedwarden up`: a working federation on this
// machine in one command — a host and member clusters (real etcd and
// kube-apiserver processes, started by localfed), the members joined, the
// common kinds enabled and the controller-manager running, until Ctrl-C.
package up

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// options are the flags of up.
type options struct {
	members     int
	dataDir     string
	keep        bool // --data-dir was given: keep state between runs
	binDir      string
	withSamples bool
	pullMembers int
	timeout     time.Duration
}

// NewCommand returns `fedwarden up`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{members: 3, dataDir: ".fedwarden", timeout: 3 * time.Minute}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local federation: a host, member clusters, and the controller-manager",
		Long: "Up starts, on this machine, a host cluster and --members member clusters (real etcd and\n" +
			"kube-apiserver processes built by 'make tools'), labelled with distinct regions; runs the\n" +
			"controller-manager; joins the members (the last --pull-members in Pull mode, each with its\n" +
			"'fedwarden agent' running here); enables Deployments, ConfigMaps, Secrets, Services and\n" +
			"Namespaces; and, with --with-samples, applies a sample federated namespace and\n" +
			"FederatedDeployment with overrides. It prints what to type next and runs until Ctrl-C,\n" +
			"which stops every process it started.\n\n" +
			"Kubeconfigs, logs and data go under .fedwarden, emptied first: every run starts a fresh\n" +
			"federation. With --data-dir, the state is kept between runs: a directory holding a federation\n" +
			"up started before (with as many members) is started again, with its objects.\n\n" +
			"Exit codes: 0 stopped by Ctrl-C, 1 could not start, 2 bad flags.",
		Example: "  fedwarden up --with-samples\n  fedwarden up --members 2 --data-dir /tmp/fed\n  fedwarden up --members 3 --pull-members 1 --with-samples",
		Args:    cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.keep = cmd.Flags().Changed("data-dir")
			if err := o.validate(); err != nil {
				return streams.UsageError(err)
			}
			return run(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.members, "members", o.members, "member clusters to start (1 to 6)")
	f.StringVar(&o.dataDir, "data-dir", o.dataDir, "directory for kubeconfigs, logs and data, kept between runs (the default one is emptied first)")
	f.StringVar(&o.binDir, "bin-dir", "", "directory of etcd, kube-apiserver and kube-controller-manager (default $FEDWARDEN_BIN_DIR, else bin/ of the Fedwarden checkout)")
	f.IntVar(&o.pullMembers, "pull-members", 0, "how many of the members (the last ones) join in Pull mode: the host gets no credentials for them, and each runs 'fedwarden agent' here")
	f.BoolVar(&o.withSamples, "with-samples", false, "apply a sample FederatedNamespace and FederatedDeployment with overrides")
	f.DurationVar(&o.timeout, "timeout", o.timeout, "how long starting may take")
	return cmd
}

func (o *options) validate() error {
	if o.members < 1 || o.members > len(regions) {
		return fmt.Errorf("--members must be between 1 and %d", len(regions))
	}
	if o.pullMembers < 0 || o.pullMembers > o.members {
		return fmt.Errorf("--pull-members must be between 0 and --members (%d)", o.members)
	}
	if o.dataDir == "" {
		return fmt.Errorf("--data-dir must not be empty")
	}
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout must be positive")
	}
	return nil
}

// regions are the members' regions, in order.
var regions = []string{"us-east", "eu-west", "ap-south", "us-west", "eu-north", "sa-east"}

// run brings the federation up, waits for Ctrl-C and brings it down.
func run(ctx context.Context, s streams.IO, o *options) error {
	dir, err := prepareDir(o.dataDir, o.keep)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the fedwarden binary: %w", err)
	}
	b := &bringer{out: s.ErrOut, self: self, typed: typedName(self), dir: dir, opts: o}
	startCtx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	upErr := b.up(startCtx)
	if upErr == nil {
		b.printNext(s.Out)
		<-ctx.Done()
		fmt.Fprintln(s.ErrOut, "\nStopping…")
	}
	if err := b.down(); err != nil && upErr == nil {
		return err
	}
	if upErr != nil {
		return fmt.Errorf("starting the local federation (logs in %s): %w", dir, upErr)
	}
	fmt.Fprintln(s.ErrOut, "Stopped.")
	return nil
}

// prepareDir returns dir's absolute path, creating it; unless keep, it is
// emptied first. It refuses a non-empty directory that up did not make.
func prepareDir(dir string, keep bool) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving --data-dir: %w", err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil && !os.IsNotExist(err) {
		return "", fmt.Errorf("reading --data-dir: %w", err)
	}
	if len(entries) > 0 {
		if _, err := os.Stat(filepath.Join(abs, markerFile)); err != nil {
			return "", fmt.Errorf("--data-dir %s is not empty and was not made by 'fedwarden up': refusing to use it", abs)
		}
		if keep {
			return abs, nil
		}
		if err := os.RemoveAll(abs); err != nil {
			return "", fmt.Errorf("emptying %s: %w", abs, err)
		}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("creating --data-dir: %w", err)
	}
	return abs, nil
}

// markerFile marks a data directory up made, which it may empty or start
// again.
const markerFile = "fedwarden-up"
