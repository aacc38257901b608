// Package drift implements `fedwarden drift`: it lists, from the
// ClusterPropagatedVersions, every member copy of a federated resource that
// is not in sync, with how it drifted.
package drift

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// options are the flags of drift.
type options struct {
	namespace     string
	allNamespaces bool
	output        string
	host          kubeconfig.Source
	timeout       time.Duration
	history       bool
}

const long = `Drift lists the member copies of federated resources that are not in sync
with the host, as the control plane last saw them: every cluster entry of a
ClusterPropagatedVersion whose state is not InSync.

STATE is OutdatedTemplate or OutdatedOverrides (the member missed an update),
ModifiedOutOfBand (someone edited the copy in the member), Waived (an edit
a waiver of the drift policy keeps until it expires), Missing (it was
deleted there), Unreachable, ApplyFailed, or AlreadyExists (the member has an
object of that name that Fedwarden does not manage). AGE is how long the copy
has been out of sync, PATHS the first fields changed out of band. -o wide adds
the field managers that changed them, the remediation in effect (Enforce
re-applies at once, Alert only reports) and the controller's message; -o json
and -o yaml print every field.

--history lists instead the drift episodes that have ended, the most recent
first, from each copy's drift ledger (the CPV keeps a copy's last 10): when
the copy drifted, how long it lasted, and what resolved it: Enforce (Fedwarden
re-applied it), Resync (a kubefed.io/resync value, shown by -o wide),
TemplateChange (the template came to say what the copy held) or Returned (the
copy came back by itself). -o wide adds who changed it and the versions before
and after.

The list reads only the host: 'fedwarden diff KIND/NAME' compares the copies
in the members themselves, 'fedwarden resync KIND/NAME' writes them again,
'fedwarden drift suggest' proposes the ignoreManagers and ignorePaths
entries that would silence what keeps drifting, 'fedwarden drift codify'
makes a cluster's drifted values its overrides, and 'fedwarden drift waive'
lets a drift stay until a date.
ClusterPropagatedVersions of cluster-scoped federated resources live in the
control-plane namespace (kube-federation-system).

Exit codes: 0 listed (drift or not), 1 error, 2 bad flags or arguments.`

const example = `  # Drift in the namespace of the current context
  fedwarden drift

  # Drift in every namespace, with who changed what
  fedwarden drift -A -o wide

  # What drifted lately, and what resolved it
  fedwarden drift -A --history -o wide

  # For a script
  fedwarden drift -A -o json

  # What keeps drifting, and the drift policy entries that would silence it
  fedwarden drift suggest -A

  # Keep a hand edit: make cluster2's drifted values its overrides
  fedwarden drift codify fdeploy/web -n shop --cluster cluster2

  # Keep a hand scale in cluster2 for four hours, even under Enforce
  fedwarden drift waive fdeploy/web -n shop --cluster cluster2 --path /spec/replicas --for 4h --reason "load test"`

// NewCommand returns `fedwarden drift`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "drift [-n NAMESPACE | -A]",
		Short:   "List the member copies of federated resources that drifted from the host",
		Long:    long,
		Example: example,
		Args:    cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace to list (default the context's namespace, else default)")
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list every namespace")
	f.StringVarP(&o.output, "output", "o", "", "output format: empty for a table, wide, json or yaml")
	f.DurationVar(&o.timeout, "timeout", time.Minute, "how long any one request to the host may take")
	f.BoolVar(&o.history, "history", false, "list the drift episodes that have ended, from the drift ledger, instead of the current drift")
	cmd.AddCommand(newSuggestCommand(s), newCodifyCommand(s), newWaiveCommand(s))
	return cmd
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	if o.allNamespaces && o.namespace != "" {
		errs = append(errs, fmt.Errorf("give -n %s or -A, not both", o.namespace))
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
	namespace, err := scope(o.allNamespaces, o.namespace, o.host)
	if err != nil {
		return err
	}
	c, err := host.Client(o.timeout)
	if err != nil {
		return err
	}
	cpvs, scopes, err := list(ctx, c, namespace)
	if err != nil {
		return err
	}
	if o.history {
		return printHistory(s, o, episodes(cpvs, scopes), namespace)
	}
	entries := entries(cpvs, scopes)
	if len(entries) == 0 && (o.output == "" || o.output == formatWide) {
		_, err := fmt.Fprintln(s.ErrOut, noDrift(namespace))
		return err
	}
	return printEntries(s.Out, o.output, entries, o.allNamespaces, time.Now())
}

// printHistory prints the ended episodes, or says there are none.
func printHistory(s streams.IO, o *options, episodes []Episode, namespace string) error {
	if len(episodes) == 0 && (o.output == "" || o.output == formatWide) {
		_, err := fmt.Fprintln(s.ErrOut, strings.Replace(noDrift(namespace), "No drift found", "No drift episode has ended", 1))
		return err
	}
	return printEpisodes(s.Out, o.output, episodes, o.allNamespaces, time.Now())
}

// noDrift says that namespace ("" for all) has no drift.
func noDrift(namespace string) string {
	if namespace == "" {
		return "No drift found."
	}
	return fmt.Sprintf("No drift found in namespace %s.", namespace)
}

// list reads the ClusterPropagatedVersions of namespace ("" for all), and
// which federated kinds are cluster-scoped.
func list(ctx context.Context, c client.Reader, namespace string) ([]typesv1beta1.ClusterPropagatedVersion, federatedtype.Scopes, error) {
	cpvs := &typesv1beta1.ClusterPropagatedVersionList{}
	if err := c.List(ctx, cpvs, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("listing ClusterPropagatedVersions: %w", err)
	}
	// The type configs only tell which federated kinds are cluster-scoped,
	// so that their resources are shown without a namespace: without them
	// the ClusterPropagatedVersion's namespace is shown.
	ftcs := &corev1beta1.FederatedTypeConfigList{}
	if err := c.List(ctx, ftcs); err != nil {
		ftcs.Items = nil
	}
	return cpvs.Items, federatedtype.ClusterScoped(ftcs.Items), nil
}

// scope is the namespace a listing reads: "" with -A (all of them),
// otherwise -n or the kubeconfig's. An unusable kubeconfig is a usage
// error.
func scope(all bool, namespace string, src kubeconfig.Source) (string, error) {
	if all {
		return "", nil
	}
	ns, err := kubeconfig.Namespace(namespace, src)
	if err != nil {
		return "", streams.UsageError(err)
	}
	return ns, nil
}

// connect loads the host's kubeconfig and makes its clients, for a
// command about one resource of namespace (the flag's, else the
// context's); a kubeconfig that cannot be used is a usage error.
func connect(src kubeconfig.Source, namespace string, timeout time.Duration) (client.Client, discovery.DiscoveryInterface, string, error) {
	host, err := kubeconfig.Load(src)
	if err != nil {
		return nil, nil, "", streams.UsageError(err)
	}
	ns, err := kubeconfig.Namespace(namespace, src)
	if err != nil {
		return nil, nil, "", streams.UsageError(err)
	}
	c, disco, err := host.Clients(timeout)
	if err != nil {
		return nil, nil, "", err
	}
	return c, disco, ns, nil
}
