// Package federate implements `fedwarden federate`: it makes a
// Federated<Kind> of an object of the host, so that the object is
// propagated to member clusters, as KubeFed's `kubefedctl federate` did.
package federate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/memberdiff/scrub"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// fieldOwner owns every field federate applies.
const fieldOwner = "fedwarden-federate"

// options are the flags and arguments of federate.
type options struct {
	resource  string
	name      string
	namespace string
	host      kubeconfig.Source
	clusters  []string
	selector  map[string]string
	all       bool
	output    string
	timeout   time.Duration
}

const long = `Federate makes a Federated<Kind> of an object of the host cluster, so that
Fedwarden propagates the object to member clusters. The kind must be enabled
first ('fedwarden enable').

KIND is the kind or resource[.group], as kubectl takes it (configmap, cm,
deployments.apps, Deployment). The Federated<Kind> has the object's name and
namespace (a FederatedNamespace lives in the namespace it federates) and its
spec.template is the object without apiVersion, kind and status, with only
the labels and annotations of its metadata (not kubectl's
last-applied-configuration, nor deployment.kubernetes.io/revision). A
Service's allocated clusterIP and clusterIPs, and a Job's generated selector
and controller-uid labels, are left out too: each member sets its own.

Where it goes is required: --clusters names member clusters,
--cluster-selector selects them by label, --all-clusters places it on every
member (an empty clusterSelector).

It is applied server-side (field manager fedwarden-federate): running
federate again updates the template from the object.

Exit codes: 0 done, 1 error, 2 bad flags or arguments, an unknown kind, a kind
that is not enabled, or an object that does not exist.`

const example = `  # Propagate the ConfigMap web-file of namespace test-namespace to two clusters
  fedwarden federate configmap web-file -n test-namespace --clusters cluster1,cluster2

  # Propagate a ClusterRole to the clusters labelled env=prod
  fedwarden federate clusterroles.rbac.authorization.k8s.io reader --cluster-selector env=prod

  # Print the FederatedDeployment instead of creating it
  fedwarden federate deployment nginx --all-clusters -o yaml`

// NewCommand returns `fedwarden federate`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "federate KIND NAME",
		Short:   "Propagate an object of the host cluster by making a Federated<Kind> of it",
		Long:    long,
		Example: example,
		Args:    cmdline.ExactArgs(2, "the kind and the object's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.resource, o.name = args[0], args[1]
			return run(cmd.Context(), s, o)
		},
	})
	addFlags(cmd, o)
	return cmd
}

func addFlags(cmd *cobra.Command, o *options) {
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the object (default the context's namespace, else default)")
	f.StringSliceVar(&o.clusters, "clusters", nil, "member clusters to place it on (comma-separated, or repeated)")
	f.StringToStringVar(&o.selector, "cluster-selector", nil, "place it on the member clusters with these labels, key=value (comma-separated, or repeated)")
	f.BoolVar(&o.all, "all-clusters", false, "place it on every member cluster")
	f.StringVarP(&o.output, "output", "o", "", "print the Federated<Kind> as yaml or json instead of creating it (a Secret's values are redacted)")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long any one request may take")
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	placements := 0
	for _, set := range []bool{len(o.clusters) > 0, len(o.selector) > 0, o.all} {
		if set {
			placements++
		}
	}
	if placements != 1 {
		errs = append(errs, errors.New("say where it goes with exactly one of --clusters, --cluster-selector and --all-clusters"))
	}
	errs = append(errs, validateClusters(o.clusters), validateSelector(o.selector), manifest.ValidateFormat(o.output),
		cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

func validateClusters(clusters []string) error {
	var errs []error
	for i, c := range clusters {
		if msgs := validation.IsDNS1123Label(c); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--clusters: cluster name %q is not valid: %s", c, strings.Join(msgs, "; ")))
		}
		if slices.Contains(clusters[:i], c) {
			errs = append(errs, fmt.Errorf("--clusters: cluster %q is given twice", c))
		}
	}
	return errors.Join(errs...)
}

func validateSelector(selector map[string]string) error {
	var errs []error
	for k, v := range selector {
		if msgs := validation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--cluster-selector: label key %q is not valid: %s", k, strings.Join(msgs, "; ")))
		}
		if msgs := validation.IsValidLabelValue(v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--cluster-selector: value %q of label %q is not valid: %s", v, k, strings.Join(msgs, "; ")))
		}
	}
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
	f, err := newFederator(s, host, o.timeout)
	if err != nil {
		return err
	}
	r, err := f.resolve(ctx, o)
	if err != nil {
		return err
	}
	fed := r.build()
	if o.output != "" {
		return manifest.Print(s.Out, o.output, []*unstructured.Unstructured{redacted(fed)})
	}
	return f.apply(ctx, fed)
}

// redacted returns fed for printing: a federated Secret's values in its
// template and overrides become markers, by the rule every command that
// prints a Secret follows (scrub.RedactRevision), since Secret content is
// never printed; fed itself, which is applied, is left as it is.
func redacted(fed *unstructured.Unstructured) *unstructured.Unstructured {
	if fed.GetKind() != "FederatedSecret" {
		return fed
	}
	out := fed.DeepCopy()
	template, _, _ := unstructured.NestedMap(out.Object, "spec", "template")
	overrides, _, _ := unstructured.NestedSlice(out.Object, "spec", "overrides")
	scrub.RedactRevision(template, overrides)
	if template != nil {
		_ = unstructured.SetNestedMap(out.Object, template, "spec", "template")
	}
	if overrides != nil {
		_ = unstructured.SetNestedSlice(out.Object, overrides, "spec", "overrides")
	}
	return out
}
