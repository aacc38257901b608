// Package status implements `fedwarden status`: one screen, read from the
// host, that tells how the federation is doing: its clusters, its enabled
// types, its federated resources and the ones that drifted most.
package status

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// defaultTop is how many worst offenders are shown unless --top says.
const defaultTop = 5

// options are the flags of status.
type options struct {
	output  string
	top     int
	host    kubeconfig.Source
	timeout time.Duration
}

const long = `Status prints on one screen how the federation is doing, as the control
plane on the host last saw it:

  Clusters             every FederatedCluster: READY is its Ready condition,
                       with the reason when it is not True; MODE is Push or
                       Pull; VERSION is the member's Kubernetes version.
  Enabled types        every FederatedTypeConfig: whether propagation is
                       Enabled, whether its controller is Running, and the
                       reason of its Established condition when not True.
  Federated resources  how many federated resources there are (one
                       ClusterPropagatedVersion each), how many reached every
                       cluster (Propagated) and how many drifted somewhere,
                       and how many member copies are in each drift state.
  Worst offenders      the --top resources with the most drifted clusters,
                       then the ones drifting the longest.

-o json and -o yaml print the same report structured.

Status reads only the host, and all of it: it needs the verb list on
federatedclusters and federatedtypeconfigs (core.kubefed.io) and on
clusterpropagatedversions (types.kubefed.io), granted cluster-wide (a
ClusterRole bound by a ClusterRoleBinding), as it reads every namespace.

'fedwarden drift -A' lists every drifted copy; 'fedwarden diff KIND/NAME'
compares the copies in the members themselves.

Exit codes: 0 reported (whether the federation is healthy or not), 1 error
(the host could not be read), 2 bad flags or arguments.`

const example = `  # How is the federation doing?
  fedwarden status

  # The ten resources that drifted most, for a script
  fedwarden status --top 10 -o json`

// NewCommand returns `fedwarden status`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "status",
		Short:   "Show on one screen how the clusters, types and federated resources are doing",
		Long:    long,
		Example: example,
		Args:    cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "output format: empty for the screen, json or yaml")
	f.IntVar(&o.top, "top", defaultTop, "how many worst offenders to show; 0 shows none")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long any one request to the host may take")
	return cmd
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	if o.top < 0 {
		errs = append(errs, fmt.Errorf("--top %d must not be negative", o.top))
	}
	errs = append(errs, validateFormat(o.output), cmdline.PositiveDuration("--timeout", o.timeout))
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
	c, err := host.Client(o.timeout)
	if err != nil {
		return err
	}
	objs, err := read(ctx, c)
	if err != nil {
		return err
	}
	return printReport(s.Out, o.output, newReport(objs, o.top), time.Now())
}

// read lists what the report is made of, all at once: a host that does
// not answer costs one --timeout, and a missing right does not hide the
// others, since the error names every list that failed.
func read(ctx context.Context, c client.Reader) (objects, error) {
	clusters := &corev1beta1.FederatedClusterList{}
	types := &corev1beta1.FederatedTypeConfigList{}
	cpvs := &typesv1beta1.ClusterPropagatedVersionList{}
	lists := []struct {
		what string
		list client.ObjectList
	}{
		{"FederatedClusters", clusters},
		{"FederatedTypeConfigs", types},
		{"ClusterPropagatedVersions", cpvs},
	}
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for i, l := range lists {
		wg.Go(func() {
			if err := c.List(ctx, l.list); err != nil {
				errs[i] = fmt.Errorf("listing %s: %w", l.what, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return objects{}, err
	}
	return objects{clusters: clusters.Items, types: types.Items, cpvs: cpvs.Items}, nil
}
