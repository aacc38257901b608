// Package diff implements `fedwarden diff`: it compares, cluster by
// cluster, the copy of a federated resource the control plane wants in a
// member with the copy the member really has, and prints the difference as
// a unified diff of YAML.
package diff

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Exit codes, as `argocd app diff` has them: 0 when no cluster differs.
const (
	// exitDiffers: at least one cluster's copy differs.
	exitDiffers = 1
	// exitError: something went wrong, or the command line is wrong
	// (streams.ExitUsage is the same code).
	exitError = 2
)

// options are the flags and argument of diff.
type options struct {
	ref         kindref.Ref
	namespace   string
	cluster     string
	members     memberdiff.Flags
	host        kubeconfig.Source
	timeout     time.Duration
	showSecrets bool
}

const long = `Diff compares a federated resource's copies in its member clusters with what
the control plane wants there, and prints each difference as a unified diff.

For each cluster the resource is placed on (spec.clusters of its
ClusterPropagatedVersion), or only --cluster, it renders the desired copy, the
template with the cluster's overrides and replicas, as the controller does,
and reads the live copy from the member. The live copy is shown pruned to the
fields the desired copy sets, so that server defaults, status, managedFields
and the member's own annotations do not show; both sides carry the
template and override versions (fedwarden.io/template-version and
fedwarden.io/override-version) the host is at.

A cluster differs when its copy is missing, when a field the desired copy sets
was changed or removed there by someone else than Fedwarden, outside the drift
policy's ignorePaths and by a field manager not in its ignoreManagers (the
same test the controller uses; what they cover is left out of the diff), or
when the copy carries other versions than the host's. Only clusters that
differ are printed.
Which clusters were compared, and how each compares, goes to stderr.

A Secret's values are not printed: on both sides, each value of data and
stringData is shown as <redacted: N bytes>, and on the live side as
<redacted: N bytes, differs> when it is not the desired value; so are the
annotation kubectl.kubernetes.io/last-applied-configuration, which holds the
data, and any other annotation that holds one of the values (of 4 bytes or
more). Keys stay visible, so the diff tells which values changed.
--show-secrets prints the values instead.

Diff reads the members with the credentials the host keeps for them, the way
the controller does: your identity in the host needs get on FederatedClusters
and on Secrets in the control-plane namespace (--control-plane-namespace).
The member's certificate is always verified, and no token is ever printed.
The host keeps no credentials for a Pull cluster: for it, diff reports what its
agent recorded in the CPV (state, versions, changed paths), and counts it as
differing unless that is InSync at the current versions.

KIND is the federated kind as kubectl takes it: FederatedDeployment,
federateddeployments, fdeploy, or the kind it federates (deployment).

Exit codes: 0 no cluster differs, 1 at least one cluster differs, 2 error
(bad flags or arguments, a resource that does not exist, a member that cannot
be reached or read).`

const example = `  # Compare the FederatedDeployment web of namespace shop in every cluster
  fedwarden diff federateddeployment/web -n shop

  # Only in cluster-a
  fedwarden diff deployment/web -n shop --cluster cluster-a

  # A FederatedSecret: which keys differ, their values redacted
  fedwarden diff federatedsecret/db-credentials -n shop`

// NewCommand returns `fedwarden diff`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "diff KIND/NAME",
		Short:   "Show how the member copies of a federated resource differ from what the host wants",
		Long:    long,
		Example: example,
	})
	cmdline.OneParsed(cmd, "the federated resource, as KIND/NAME", kindref.ParseRef, &o.ref, func(ctx context.Context) error {
		return exitCode(run(ctx, s, o))
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the context's namespace, else default)")
	f.StringVar(&o.cluster, "cluster", "", "compare only in this cluster, one the resource is placed on")
	o.members.Add(f)
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long any one request to the host or a member may take")
	f.BoolVar(&o.showSecrets, "show-secrets", false, "print the values of a Secret's data and stringData, and the annotations that hold them, instead of redacting them: "+
		"this reveals secret values on your terminal and in whatever records it")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	if o.cluster != "" {
		errs = append(errs, memberdiff.ClusterName("--cluster", o.cluster))
	}
	errs = append(errs, o.members.Validate()...)
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	namespace, err := kubeconfig.Namespace(o.namespace, o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	d, err := newDiffer(s, host, o)
	if err != nil {
		return err
	}
	return d.diff(ctx, o.ref, namespace, o.cluster)
}

// exitCode gives err the exit code of an error of diff: any error that has
// none is exitError, so that 1 only ever means "differs".
func exitCode(err error) error {
	var exit *streams.ExitError
	if err == nil || errors.As(err, &exit) {
		return err
	}
	return &streams.ExitError{Code: exitError, Err: err}
}
