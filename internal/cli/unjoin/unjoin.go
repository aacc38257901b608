// Package unjoin implements `fedwarden unjoin`: it removes a member cluster
// from the federation, deleting what `fedwarden join` created on both
// sides.
package unjoin

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// exitMemberLeft is the exit code of an unjoin that removed the host side
// but not the member side. Bad flags or arguments, which change nothing,
// are usage errors (streams.ExitUsage).
const exitMemberLeft = 3

// options are the flags and argument of unjoin.
type options struct {
	name      string
	host      kubeconfig.Source
	member    kubeconfig.Source
	namespace string
	timeout   time.Duration
	// set tells which flags the command line gave.
	set func(flag string) bool
}

// memberGiven reports whether the command line named the member's
// kubeconfig or context.
func (o *options) memberGiven() bool {
	return o.set != nil && (o.set(o.member.PathFlag[2:]) || o.set(o.member.ContextFlag[2:]))
}

const long = `Unjoin removes a cluster from the federation.

In the host cluster it deletes the FederatedCluster NAME and its credentials
Secret (the one its spec.secretRef names, and fedwarden-NAME-credentials). In
the member cluster it then deletes the ClusterRoleBinding and ClusterRole
fedwarden:member:NAME, the Secret fedwarden-NAME-token and the ServiceAccount
fedwarden-NAME, so the host can no longer write to it.

For a Pull cluster (spec.syncMode Pull) it deletes on the host the
FederatedCluster and the agent's ServiceAccount fedwarden-agent-NAME, its token
Secret fedwarden-agent-NAME-token, its Lease fedwarden-agent-NAME and its
ClusterRoleBinding, Role and RoleBinding fedwarden:agent:NAME, so the agent can
no longer reach the host; the ClusterRole fedwarden:agent and the admission
policy fedwarden-agent-isolation, which every agent shares, stay. When
--cluster-kubeconfig or --cluster-context is given, it then deletes in the
member the agent's Deployment, Secret fedwarden-agent-host, ClusterRoleBinding,
ClusterRole and ServiceAccount fedwarden-agent; without, it leaves them and
says how to delete them. When the FederatedCluster is already gone, the objects
of both modes are deleted. The control-plane
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
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "unjoin NAME",
		Short:   "Remove a cluster from the federation",
		Long:    long,
		Example: "  fedwarden unjoin east --cluster-context kind-east",
		Args:    cmdline.ExactArgs(1, "the cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			o.set = cmd.Flags().Changed
			return run(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	kubeconfig.AddClusterFlags(cmd, &o.member, "the cluster to remove")
	f := cmd.Flags()
	f.StringVar(&o.namespace, "namespace", v1beta1.DefaultFederationNamespace, "control-plane namespace, in the host and in the member")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long to try to reach the member, and to wait for any one request to the host")
	return cmd
}

func (o *options) validate() error {
	return errors.Join(registration.ValidateName(o.name), registration.ValidateNamespace(o.namespace),
		cmdline.PositiveDuration("--timeout", o.timeout))
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	// A Pull cluster's member is only needed when it is named: its
	// kubeconfig may be missing.
	member, memberErr := kubeconfig.Load(o.member)
	if memberErr != nil && o.memberGiven() {
		return streams.UsageError(memberErr)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	u, err := newUnjoiner(s, o, member, memberErr, host)
	if err != nil {
		return err
	}
	return u.unjoin(ctx)
}
