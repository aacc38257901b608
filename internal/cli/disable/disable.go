// Package disable implements `fedwarden disable`: it turns propagation of
// a federated kind off, and optionally deletes its FederatedTypeConfig and
// the CustomResourceDefinition of its Federated<Kind>.
package disable

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// fieldOwner owns spec.propagation when disable sets it.
const fieldOwner = "fedwarden-disable"

// options are the flags and argument of disable.
type options struct {
	resource  string
	host      kubeconfig.Source
	delete    bool
	deleteCRD bool
	force     bool
	timeout   time.Duration
}

const long = `Disable stops Fedwarden from propagating a kind: it sets spec.propagation of
the kind's FederatedTypeConfig to Disabled. The copies already in member
clusters are left as they are (neither updated nor deleted), and the
Federated<Kind> resources stay in the host; 'fedwarden enable' turns
propagation back on.

RESOURCE is resource[.group] as 'fedwarden enable' takes it, or the name of a
FederatedTypeConfig.

With --delete, the FederatedTypeConfig is deleted instead. With --delete-crd
(which implies --delete), the CustomResourceDefinition of Federated<Kind> is
deleted too, and with it every Federated<Kind> resource in the host: disable
refuses while there are any, unless --force. The FederatedDeployment CRD
ships with Fedwarden and is never deleted.

Exit codes: 0 done, 1 error, 2 bad flags or arguments, or a kind that is not
enabled.`

const example = `  # Stop propagating ConfigMaps
  fedwarden disable configmaps

  # Forget the type entirely, removing FederatedConfigMap from the host
  fedwarden disable configmaps --delete-crd`

// NewCommand returns `fedwarden disable`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "disable RESOURCE[.GROUP]",
		Short:   "Stop propagating a federated kind; optionally delete its FederatedTypeConfig and CRD",
		Long:    long,
		Example: example,
		Args:    cmdline.ExactArgs(1, "the resource"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.resource = args[0]
			return run(cmd.Context(), s, o)
		},
	})
	addFlags(cmd, o)
	return cmd
}

func addFlags(cmd *cobra.Command, o *options) {
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.BoolVar(&o.delete, "delete", false, "delete the FederatedTypeConfig instead of disabling its propagation")
	f.BoolVar(&o.deleteCRD, "delete-crd", false, "also delete the Federated<Kind> CRD, and with it every Federated<Kind> resource (implies --delete)")
	f.BoolVar(&o.force, "force", false, "with --delete-crd: delete the CRD even though Federated<Kind> resources exist")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for a CRD to be deleted, and for any one request")
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	if o.force && !o.deleteCRD {
		errs = append(errs, errors.New("--force applies to --delete-crd only"))
	}
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
	d, err := newDisabler(s, host, o.timeout)
	if err != nil {
		return err
	}
	ft, err := d.find(ctx, o.resource)
	if err != nil {
		return err
	}
	switch {
	case o.deleteCRD:
		return d.deleteAll(ctx, ft, o.force)
	case o.delete:
		return d.deleteTypeConfig(ctx, ft)
	default:
		return d.disable(ctx, ft)
	}
}
