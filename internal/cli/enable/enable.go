// Package enable implements `fedwarden enable`: it enables federation of a
// kind, by creating its FederatedTypeConfig and the CustomResourceDefinition
// of its Federated<Kind> in the host, as KubeFed's `kubefedctl enable` did.
package enable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// fieldOwner owns every field enable applies.
const fieldOwner = "fedwarden-enable"

// options are the flags and argument of enable.
type options struct {
	resource         string
	files            []string
	host             kubeconfig.Source
	output           string
	timeout          time.Duration
	targetVersion    string
	federatedGroup   string
	federatedVersion string
}

const long = `Enable federates a kind: it creates, in the host cluster, the
CustomResourceDefinition of Federated<Kind> (group types.kubefed.io, version
v1beta1) and the FederatedTypeConfig that tells Fedwarden to propagate it.

RESOURCE is resource[.group], as kubectl takes it: a plural, singular, kind or
short name, in any case (configmaps, cm, ConfigMap, deployments.apps,
ingresses.networking.k8s.io). The kind's preferred version is propagated,
unless --target-version says otherwise. With -f, the resources are read from
KubeFed EnableTypeDirective files (one or more, or a directory of them), whose
metadata.name is resource[.group] and whose spec.targetVersion,
spec.federatedGroup and spec.federatedVersion are honoured.

The schema of spec.template is converted from the host's OpenAPI v3 document
of the kind, without descriptions; when the host publishes none, the template
accepts any field, and enable says so. An Ingress template
(networking.k8s.io/v1) also accepts the extensions/v1beta1 shape of KubeFed's
manifests (backend.serviceName and servicePort, spec.backend, no pathType),
which Fedwarden converts to v1 when it propagates. spec.placement,
spec.overrides and status are those of FederatedDeployment. The
FederatedDeployment CRD ships with Fedwarden: enabling deployments.apps
creates only its FederatedTypeConfig (and the CRD, if it is missing).

Everything is applied server-side (field manager fedwarden-enable), so running
enable again updates the CRD and turns propagation back on if
'fedwarden disable' had turned it off. Enable waits until the CRD is
Established.

Exit codes: 0 enabled, 1 error, 2 bad flags or arguments, or an unknown
resource.`

const example = `  # Enable ConfigMaps and Deployments
  fedwarden enable configmaps
  fedwarden enable deployments.apps

  # Enable the types of KubeFed's EnableTypeDirective files
  fedwarden enable -f enabletypedirectives/

  # Print the FederatedTypeConfig and CRD instead of creating them
  fedwarden enable ingresses.networking.k8s.io -o yaml`

// NewCommand returns `fedwarden enable`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "enable RESOURCE[.GROUP] | -f FILE",
		Short:   "Enable federation of a kind: create its FederatedTypeConfig and Federated<Kind> CRD",
		Long:    long,
		Example: example,
		// The resource, or none with -f.
		Args: cmdline.MaxArgs(1, "the resource"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.resource = args[0]
			}
			return run(cmd.Context(), s, o)
		},
	})
	addFlags(cmd, o)
	return cmd
}

func addFlags(cmd *cobra.Command, o *options) {
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "KubeFed EnableTypeDirective file, or directory of them (repeatable)")
	f.StringVarP(&o.output, "output", "o", "", "print the FederatedTypeConfig and CRD as yaml or json instead of creating them")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long to wait for each CRD to be Established, and for any one request")
	f.StringVar(&o.targetVersion, "target-version", "", "version of the kind to propagate (default its preferred version)")
	f.StringVar(&o.federatedGroup, "federated-group", "", "group of the Federated<Kind> (default types.kubefed.io)")
	f.StringVar(&o.federatedVersion, "federated-version", "", "version of the Federated<Kind> (default v1beta1)")
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	switch {
	case o.resource == "" && len(o.files) == 0:
		errs = append(errs, errors.New("enable needs a resource, as resource[.group], or -f with EnableTypeDirective files"))
	case o.resource != "" && len(o.files) > 0:
		errs = append(errs, fmt.Errorf("give either the resource %q or -f, not both", o.resource))
	case len(o.files) > 0 && (o.targetVersion != "" || o.federatedGroup != "" || o.federatedVersion != ""):
		errs = append(errs, errors.New("--target-version, --federated-group and --federated-version apply to the resource argument; "+
			"with -f, set spec.targetVersion, spec.federatedGroup and spec.federatedVersion in the directives"))
	}
	if err := manifest.ValidateFormat(o.output); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

// requests returns the types to enable.
func (o *options) requests() ([]request, error) {
	if len(o.files) > 0 {
		return readDirectives(o.files)
	}
	return []request{{
		resource:         o.resource,
		targetVersion:    o.targetVersion,
		federatedGroup:   o.federatedGroup,
		federatedVersion: o.federatedVersion,
	}}, nil
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	reqs, err := o.requests()
	if err != nil {
		return streams.UsageError(err)
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	e, err := newEnabler(s, host, o.timeout)
	if err != nil {
		return err
	}
	// Every type is planned before anything is written, so that an unknown
	// resource in a directory of directives changes nothing.
	plans := make([]*plan, 0, len(reqs))
	for _, req := range reqs {
		p, err := e.plan(ctx, req)
		if err != nil {
			return err
		}
		plans = append(plans, p)
	}
	if o.output != "" {
		return printPlans(s, o.output, plans)
	}
	for _, p := range plans {
		if err := e.enable(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
