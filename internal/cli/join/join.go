// Package join implements `fedwarden join`: it makes a cluster a member of
// the federation, by creating an identity for the host in the member and
// the credentials and FederatedCluster in the host.
package join

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/cmdline"
	"github.com/fedwarden/fedwarden/internal/cli/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/cli/manifest"
	"github.com/fedwarden/fedwarden/internal/cli/streams"
	"github.com/fedwarden/fedwarden/internal/registration"
)

// Field managers of the server-side applies.
const (
	// fieldOwner owns every field join sets, but the Secret's owner.
	fieldOwner = "fedwarden-join"
	// ownerFieldOwner owns the owner reference of the host Secret, which
	// is set once the FederatedCluster exists; a manager of its own keeps
	// the first apply of the Secret from removing it on a re-join.
	ownerFieldOwner = "fedwarden-join-owner"
)

// options are the flags and argument of join.
type options struct {
	name      string
	host      kubeconfig.Source
	member    kubeconfig.Source
	syncMode  string
	region    string
	zones     []string
	labels    map[string]string
	resources []string
	rbac      bool
	namespace string
	dryRun    bool
	output    string
	wait      bool
	timeout   time.Duration
}

const long = `Join makes a cluster a member of the federation.

In the member cluster it creates, in the control-plane namespace (--namespace),
a ServiceAccount fedwarden-NAME with a long-lived token Secret
fedwarden-NAME-token, and a ClusterRole and ClusterRoleBinding
fedwarden:member:NAME that grant it the rights propagation needs: get, list,
watch, create, update, patch and delete on every top-level resource the member
serves when it joins (no subresources: no exec, proxy or token minting), or only
on those of --resources (plus reading nodes, pods and resourcequotas and creating
namespaces), and reading /readyz, /healthz, /livez and /version. Run join again
after installing a new kind in the member. Nothing is bound to
cluster-admin. Propagating RBAC objects that grant or bind rights the host
lacks on the member (KubeFed's sample ClusterRole and ClusterRoleBinding)
also needs bind and escalate on roles and clusterroles: --propagate-rbac
grants them, which amounts to cluster-admin on the member.

In the host cluster it then creates the Secret fedwarden-NAME-credentials,
holding that token and the member's CA, and the FederatedCluster NAME, whose
API endpoint and CA bundle come from the member's kubeconfig. That kubeconfig
must use https and verify the server (certificate-authority-data, or none for
the system roots): Fedwarden never skips TLS verification.

Everything is applied server-side: running join again updates the objects and
changes nothing when nothing changed. The token is never printed.

Kubeconfigs are found as kubectl finds them: the flag, else $KUBECONFIG, else
~/.kube/config; the context defaults to the current one.

Exit codes: 0 joined, 1 error, 2 bad flags or arguments.`

const example = `  # Join the cluster of context kind-east, using the host of the current context
  fedwarden join east --cluster-context kind-east --region us-east-1 --zone us-east-1a

  # Only allow Deployments, ConfigMaps and Services to be propagated to it
  fedwarden join east --cluster-context kind-east --resources deployments.apps,configmaps,services

  # Show what would be created, without changing anything
  fedwarden join east --cluster-context kind-east --dry-run -o yaml`

// NewCommand returns `fedwarden join`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "join NAME",
		Short:   "Make a cluster a member of the federation",
		Long:    long,
		Example: example,
		Args:    cmdline.ExactArgs(1, "the cluster name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.name = args[0]
			return run(cmd.Context(), s, o)
		},
	})
	addFlags(cmd, o)
	return cmd
}

func addFlags(cmd *cobra.Command, o *options) {
	kubeconfig.AddHostFlags(cmd, &o.host)
	kubeconfig.AddClusterFlags(cmd, &o.member, "the cluster to join")
	f := cmd.Flags()
	f.StringVar(&o.syncMode, "sync-mode", string(v1beta1.SyncModePush), "Push: the host writes to the member (Pull is not available yet)")
	f.StringVar(&o.region, "region", "", "region the cluster runs in")
	f.StringSliceVar(&o.zones, "zone", nil, "zone the cluster spans (repeatable, or comma-separated)")
	f.StringToStringVar(&o.labels, "label", nil, "label key=value of the FederatedCluster (repeatable, or comma-separated)")
	f.StringSliceVar(&o.resources, "resources", nil, "only allow these resources, as resource[.group], to be propagated (repeatable, or comma-separated; default all)")
	f.BoolVar(&o.rbac, "propagate-rbac", false, "also grant bind and escalate on roles and clusterroles, so that RBAC objects can be propagated; this amounts to cluster-admin on the member")
	f.StringVar(&o.namespace, "namespace", v1beta1.DefaultFederationNamespace, "control-plane namespace, in the host and in the member")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the objects that would be created, and change nothing")
	f.StringVarP(&o.output, "output", "o", "", "format of --dry-run: yaml (default) or json")
	f.BoolVar(&o.wait, "wait", true, "wait until the FederatedCluster is Ready")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the member's token, for the cluster to be Ready, and for any one request")
}

// validate checks the flags that need no kubeconfig.
func (o *options) validate() error {
	var errs []error
	if o.output != "" && !o.dryRun {
		errs = append(errs, fmt.Errorf("--output %q needs --dry-run: join prints objects only in a dry run", o.output))
	} else {
		errs = append(errs, manifest.ValidateFormat(o.output))
	}
	if o.syncMode == string(v1beta1.SyncModePull) {
		errs = append(errs, errors.New("--sync-mode Pull is not available yet: pull mode arrives with the member agent, which is not built yet; join with --sync-mode Push"))
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	if _, err := registration.ParseResources(o.resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	return errors.Join(errs...)
}

// spec returns the registration of the member whose kubeconfig is member.
func (o *options) spec(member *kubeconfig.Cluster) (registration.Spec, error) {
	if member.Insecure {
		return registration.Spec{}, fmt.Errorf("context %q of kubeconfig %s sets insecure-skip-tls-verify: Fedwarden verifies the member's certificate, "+
			"so it needs a kubeconfig with certificate-authority-data (or none, for a certificate the system roots trust)", member.Context, member.File)
	}
	if member.TLSServerName != "" {
		return registration.Spec{}, fmt.Errorf("context %q of kubeconfig %s sets tls-server-name, which a FederatedCluster cannot hold: "+
			"use a kubeconfig whose server URL matches the member's certificate", member.Context, member.File)
	}
	resources, err := registration.ParseResources(o.resources)
	if err != nil {
		return registration.Spec{}, fmt.Errorf("--resources: %w", err)
	}
	spec := registration.Spec{
		Name:          o.name,
		Namespace:     o.namespace,
		APIEndpoint:   member.Server,
		CABundle:      member.CAData,
		SyncMode:      v1beta1.SyncMode(o.syncMode),
		Region:        o.region,
		Zones:         o.zones,
		Labels:        o.labels,
		Resources:     resources,
		PropagateRBAC: o.rbac,
	}
	if err := spec.Validate(); err != nil {
		return registration.Spec{}, err
	}
	return spec, nil
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	member, err := kubeconfig.Load(o.member)
	if err != nil {
		return streams.UsageError(err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	spec, err := o.spec(member)
	if err != nil {
		return streams.UsageError(err)
	}
	if o.dryRun {
		if len(spec.Resources) == 0 {
			fmt.Fprintln(s.ErrOut, "dry run: without --resources, join grants write rights on every resource the member serves, "+
				"read from the member's discovery when it runs; those rules are not shown here")
		}
		return printObjects(s.Out, spec, o.output)
	}
	if len(spec.Resources) == 0 {
		if spec.Resources, err = servedResources(member, o.timeout); err != nil {
			return err
		}
	}
	j, err := newJoiner(s, o, spec, member, host)
	if err != nil {
		return err
	}
	return j.join(ctx)
}

// servedResources lists the resources the member serves, which the host's
// identity there gets rights on when --resources does not say which.
func servedResources(member *kubeconfig.Cluster, timeout time.Duration) ([]registration.Resource, error) {
	cfg := rest.CopyConfig(member.Config)
	cfg.Timeout = timeout
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("reading the resources the member serves: %w", err)
	}
	lists, err := dc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("reading the resources the member serves, to grant the host rights on each (or list them with --resources): %w", err)
	}
	return registration.ServedResources(lists), nil
}
