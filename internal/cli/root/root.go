// Package root assembles the fedwarden command tree and runs it.
package root

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cli/agent"
	"github.com/fedwarden/fedwarden/internal/cli/console"
	"github.com/fedwarden/fedwarden/internal/cli/controllermanager"
	"github.com/fedwarden/fedwarden/internal/cli/diff"
	"github.com/fedwarden/fedwarden/internal/cli/disable"
	"github.com/fedwarden/fedwarden/internal/cli/drift"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/cli/failback"
	"github.com/fedwarden/fedwarden/internal/cli/federate"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/cli/migrate"
	"github.com/fedwarden/fedwarden/internal/cli/plan"
	"github.com/fedwarden/fedwarden/internal/cli/resync"
	"github.com/fedwarden/fedwarden/internal/cli/rollout"
	"github.com/fedwarden/fedwarden/internal/cli/status"
	"github.com/fedwarden/fedwarden/internal/cli/unjoin"
	"github.com/fedwarden/fedwarden/internal/cli/up"
	"github.com/fedwarden/fedwarden/internal/cli/version"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// NewCommand returns the root command with every subcommand attached.
func NewCommand(s streams.IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fedwarden",
		Short: "Keep many Kubernetes clusters at the version the control plane says, and prove it",
		Long: "Fedwarden propagates Federated<Kind> resources from a host cluster to member clusters,\n" +
			"records in a ClusterPropagatedVersion which version each member really has, and\n" +
			"detects and heals drift.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, _ []string) {
			// The client libraries log through controller-runtime's logger;
			// commands report their own errors, so, unless a command sets up
			// logging itself, that logger discards.
			if _, own := cmd.Annotations[streams.AnnotationOwnLogger]; !own {
				streams.DiscardLibraryLogs()
			}
		},
	}
	// Bad flags of any subcommand are usage errors (exit code 2).
	cmdline.Setup(cmd)
	cmd.SetIn(s.In)
	cmd.SetOut(s.Out)
	cmd.SetErr(s.ErrOut)
	cmd.AddCommand(
		agent.NewCommand(s),
		console.NewCommand(s),
		controllermanager.NewCommand(s),
		diff.NewCommand(s),
		disable.NewCommand(s),
		drift.NewCommand(s),
		enable.NewCommand(s),
		failback.NewCommand(s),
		federate.NewCommand(s),
		join.NewCommand(s),
		migrate.NewCommand(s),
		plan.NewCommand(s),
		resync.NewCommand(s),
		rollout.NewCommand(s),
		status.NewCommand(s),
		unjoin.NewCommand(s),
		up.NewCommand(s),
		version.NewCommand(s),
	)
	return cmd
}

// Execute runs the command line args and returns the process exit code:
// 0 on success, the code of an ExitError, or 1 for any other error.
// SIGINT and SIGTERM cancel the command's context, so that long-running
// commands stop cleanly.
func Execute(args []string, in io.Reader, out, errOut io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ExecuteContext(ctx, args, in, out, errOut)
}

// ExecuteContext is Execute with the caller's context.
func ExecuteContext(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	cmd := NewCommand(streams.IO{In: in, Out: out, ErrOut: errOut})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	fmt.Fprintf(errOut, "Error: %v\n", err)
	return streams.ExitCode(err)
}
