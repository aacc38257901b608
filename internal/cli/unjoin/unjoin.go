// Package unjoin implements `fedwarden unjoin`: it removes a member cluster
// from the federation, deleting what `fedwarden join` created on both
// sides.
package unjoin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/cli/streams"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// Exit codes of unjoin, beyond 0 and 1.
const (
	// exitUsage: bad flags or arguments; nothing was changed.
	exitUsage = 2
	// exitMemberLeft: the host side was removed, the member side was not.
	exitMemberLeft = 3
)

// options are the flags and argument of unjoin.
type options struct {
	name      string
	host      kubeconfig.Source
	member    kubeconfig.Source
	namespace string
	timeout   time.Duration
}

const long = `Unjoin removes a cluster from the federation.

In the host cluster it deletes the FederatedCluster NAME and its credentials
Secret (the one its spec.secretRef names, and fedwarden-NAME-credentials). In
the member cluster it then deletes the ClusterRoleBinding and ClusterRole
fedwarden:member:NAME, the Secret fedwarden-NAME-token and the ServiceAccount
fedwarden-NAME, so the host can no longer write to it. The control-plane
namespace is never deleted, in either cluster: the member may also be the host,
or other members' credentials may live in it. Objects already propagated to
the member are left as they are.

Objects that are already gone are fine: unjoin can be run again. If the member
cannot be reached within --timeout, the host side is still removed; unjoin then
lists the member objects it left and exits with code 3: run it again when the
member is reachable.

Exit codes:
  0  done: both sides removed
  1  error
  2  bad flags or arguments; nothing was changed
  3  the host side was removed, but the member side was left`

// NewCommand returns `fedwarden unjoin`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:     "unjoin NAME",
		Short:   "Remove a cluster from the federation",
		Long:    long,
		Example: "  fedwarden unjoin east --cluster-context kind-east",
		Args:    exactlyOneName,
		// Errors are printed once, by the root command; usage only on request.
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return run(cmd.Context(), s, o)
		},
	}
	cmd.SetFlagErrorFunc(usageError)
	f := cmd.Flags()
	f.StringVar(&o.host.Path, "host-kubeconfig", "", "kubeconfig of the host cluster (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.host.Context, "host-context", "", "context of the host cluster (default the current context)")
	f.StringVar(&o.member.Path, "cluster-kubeconfig", "", "kubeconfig of the cluster to remove (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.member.Context, "cluster-context", "", "context of the cluster to remove (default the current context)")
	f.StringVar(&o.namespace, "namespace", v1beta1.DefaultFederationNamespace, "control-plane namespace, in the host and in the member")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to try to reach the member, and to wait for any one request to the host")
	o.host.PathFlag, o.host.ContextFlag = "--host-kubeconfig", "--host-context"
	o.member.PathFlag, o.member.ContextFlag = "--cluster-kubeconfig", "--cluster-context"
	return cmd
}

func exactlyOneName(_ *cobra.Command, args []string) error {
	if len(args) != 1 {
		return usageError(nil, fmt.Errorf("unjoin takes one argument, the cluster name; got %d", len(args)))
	}
	return nil
}

// usageError is an error of the command line: exit code 2.
func usageError(_ *cobra.Command, err error) error {
	return &streams.ExitError{Code: exitUsage, Err: err}
}

func (o *options) validate() error {
	var errs []error
	errs = append(errs, registration.ValidateName(o.name), registration.ValidateNamespace(o.namespace))
	if o.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must be positive", o.timeout))
	}
	return errors.Join(errs...)
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return usageError(nil, err)
	}
	member, err := kubeconfig.Load(o.member)
	if err != nil {
		return usageError(nil, err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return usageError(nil, err)
	}
	u, err := newUnjoiner(s, o, member, host)
	if err != nil {
		return err
	}
	return u.unjoin(ctx)
}
