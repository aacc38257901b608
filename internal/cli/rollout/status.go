package rollout

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/streams"
)

// pollInterval is how often status reads the resource again while it
// waits.
const pollInterval = time.Second

// statusOptions are the flags of status.
type statusOptions struct {
	options
	watch   bool
	timeout time.Duration
}

const statusLong = `Status shows the rollout of a federated resource's latest revision: under
strategy Waves, the revision and the one it rolls out from, each wave's phase
and, for each of its clusters, the revision it is to have (TARGET), its state
and its health, as the ClusterPropagatedVersion records them, and why a wave
waits or halted. Under strategy All, every cluster gets each revision at once:
status shows the clusters' versions.

By default it waits, showing the rollout again each time it changes, until the
rollout is done (condition RolledOut True; exit 0) or halted (condition
RolloutHalted True; exit 1, saying why). --timeout bounds the wait (exit 1 when
it runs out); --watch=false shows the rollout once and exits 0 whatever its
state. A condition counts only once the control plane has observed the
resource's latest generation.`

const statusExample = `  # Wait until the FederatedDeployment web of namespace shop is rolled out
  fedwarden rollout status federateddeployment/web -n shop

  # Show where it is, without waiting
  fedwarden rollout status deployment/web -n shop --watch=false`

func newStatusCommand(s streams.IO) *cobra.Command {
	o := &statusOptions{}
	cmd := subcommand(&cobra.Command{
		Use:     "status KIND/NAME",
		Short:   "Show the rollout of a federated resource, and wait until it is done",
		Long:    statusLong,
		Example: statusExample,
	}, &o.options, func(ctx context.Context) error {
		if o.timeout < 0 {
			return streams.UsageError(fmt.Errorf("--timeout %s must not be negative", o.timeout))
		}
		return runStatus(ctx, s.Out, o)
	})
	f := cmd.Flags()
	f.BoolVarP(&o.watch, "watch", "w", true, "wait until the rollout is done or halted; --watch=false shows it once")
	f.DurationVar(&o.timeout, "timeout", 0, "how long to wait before giving up (exit code 1); 0 waits without limit")
	return cmd
}

func runStatus(ctx context.Context, out io.Writer, o *statusOptions) error {
	t, err := o.connect(ctx)
	if err != nil {
		return err
	}
	wait := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	var last, verdict string
	// failed tells a request cut short by --timeout from other errors.
	failed := func(err error) error {
		if wait.Err() != nil && ctx.Err() == nil {
			return timedOut(t, o.timeout, verdict)
		}
		return err
	}
	for {
		snap, err := t.snapshot(wait)
		if err != nil {
			return failed(err)
		}
		if err := printChanged(out, snap, &last); err != nil {
			return err
		}
		var result outcome
		result, verdict = snap.verdict()
		switch {
		case result == rolledOut || !o.watch:
			return nil
		case result == halted:
			return fmt.Errorf("%s: rollout %s", t.describe(), lowerFirst(verdict))
		}
		select {
		case <-wait.Done():
			return failed(wait.Err())
		case <-time.After(pollInterval):
		}
		if err := t.reload(wait, t.key()); err != nil {
			return failed(err)
		}
	}
}

// snapshot reads the resource's CPV and makes the snapshot of both.
func (t *target) snapshot(ctx context.Context) (snapshot, error) {
	cpv, err := t.cpv(ctx)
	if err != nil {
		return snapshot{}, err
	}
	return newSnapshot(t.describe(), t.command("resume"), t.fed, cpv)
}

// printChanged prints snap unless it reads as last did, and records it.
func printChanged(out io.Writer, snap snapshot, last *string) error {
	var b strings.Builder
	if err := snap.print(&b); err != nil {
		return err
	}
	if b.String() == *last {
		return nil
	}
	if *last != "" {
		if _, err := io.WriteString(out, "\n"); err != nil {
			return err
		}
	}
	*last = b.String()
	_, err := io.WriteString(out, *last)
	return err
}

func timedOut(t *target, timeout time.Duration, verdict string) error {
	if verdict == "" {
		return fmt.Errorf("timed out after %s waiting for the rollout of %s", timeout, t.describe())
	}
	return fmt.Errorf("timed out after %s waiting for the rollout of %s; last seen: %s", timeout, t.describe(), verdict)
}

// lowerFirst makes a sentence part of another: "Halted (...)" → "halted (...)".
func lowerFirst(s string) string {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}
