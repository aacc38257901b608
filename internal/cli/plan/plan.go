package plan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Exit codes, as `fedwarden diff` has them: 0 when nothing would change.
const (
	// exitChanges: at least one cluster would be written, or its member
	// refuses the write.
	exitChanges = 1
	// exitError: something went wrong, or the command line is wrong
	// (streams.ExitUsage is the same code).
	exitError = 2
)

// Output formats of -o.
const (
	outputText = ""
	outputJSON = "json"
)

// options are the flags and argument of plan.
type options struct {
	ref          kindref.Ref
	file         string
	namespace    string
	controlPlane string
	host         kubeconfig.Source
	timeout      time.Duration
	output       string
	plugins      string
	remediation  string
	memberNets   []string
	networks     egress.Networks
	down         []string
}

const long = `Plan shows, before a change to a federated resource is applied, what the
control plane would do in each member cluster, and writes nothing anywhere.

With -f FILE, it plans the Federated<Kind> manifests in FILE (YAML or JSON, one
object or more), or in the .yaml, .yml and .json files of a directory, as if
all were applied; a FederatedNamespace among them federates its namespace for
the others. With KIND/NAME (fdeploy/web, deployment/web), it plans the resource
as the host has it now: what the controller would do next.

For each cluster it shows the scheduler's decision (without member capacity),
the rollout wave and when the change arrives, what the controller would do
(Create, Update, Delete or Unchanged) and why, the member's answer to a
server-side dry run of the write ("REFUSED by the member" when it refuses), the
diff of the live copy against the planned one, and the drift the write would
overwrite. With --what-if-down C, it plans as if cluster C had been down past
any failover toleration: where the resource's failover policy would move its
replicas or a surge copy (docs/failover.md), and what falls short. It runs the controller's own stages; a Secret's values are never
printed. Members are reached with the credentials the host keeps for them (you
need get on FederatedClusters and on Secrets in the control-plane namespace);
a Pull cluster is planned from its agent's report, without a dry run.
docs/plan.md says more.

Exit codes: 0 nothing would change anywhere, 1 at least one cluster would
change or its member refuses the change, 2 error (bad flags or arguments, a
file that cannot be read, a resource that does not exist, a host or member
that cannot be reached).`

const example = `  # What applying web.yaml would do, cluster by cluster
  fedwarden plan -f web.yaml

  # The same for CI: a JSON report, exit code 1 when anything changes
  fedwarden plan -f web.yaml -o json

  # What the controller would do next with the FederatedDeployment shop/web
  fedwarden plan federateddeployment/web -n shop

  # Where web's replicas would go if cluster eu-2 failed
  fedwarden plan fdeploy/web -n shop --what-if-down eu-2`

// NewCommand returns `fedwarden plan`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "plan (-f FILE | KIND/NAME)",
		Short:   "Show what a change to a federated resource would do in each member cluster, writing nothing",
		Long:    long,
		Example: example,
		Args:    cmdline.MaxArgs(1, "the federated resource, as KIND/NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.setArgs(args); err != nil {
				return streams.UsageError(err)
			}
			return exitCode(run(cmd.Context(), s, o))
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "Federated<Kind> manifests: a YAML or JSON file of one or more objects, or a directory of such files (- reads standard input); plans them instead of a resource the host has")
	f.StringVarP(&o.namespace, "namespace", "n", "", "namespace of the federated resource (default the manifest's, else the context's namespace, else default)")
	f.StringVarP(&o.output, "output", "o", "", "output format: json (default: a report per cluster)")
	f.StringVar(&o.controlPlane, "control-plane-namespace", corev1beta1.DefaultFederationNamespace,
		"control-plane namespace of the host: the members' credential Secrets, and the ClusterPropagatedVersions of cluster-scoped resources")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "how long any one request to the host or a member may take")
	f.StringVar(&o.plugins, "plugins", scheduler.DefaultPlugins, "scheduler plugins, as the controller-manager's flag of that name")
	f.StringVar(&o.remediation, "default-remediation", string(typesv1beta1.RemediationEnforce),
		"the remediation of resources whose driftPolicy names none, as the controller-manager's flag of that name: Enforce or Alert")
	f.StringArrayVar(&o.down, "what-if-down", nil, "plan as if this cluster had been not Ready for longer than any failover toleration: where its replicas would go "+
		"(spec.placement.failover), and what falls short; nothing is written or dry-run there; repeat it for several")
	f.StringSliceVar(&o.memberNets, "member-networks", nil, "CIDRs member API servers may be reached at, as the controller-manager's flag of that name; "+
		"a member outside them is reported as an error without being contacted (default: any address)")
	return cmd
}

// setArgs takes KIND/NAME, or nothing with -f.
func (o *options) setArgs(args []string) error {
	switch {
	case len(args) == 1 && o.file != "":
		return fmt.Errorf("plan takes -f FILE or KIND/NAME, not both")
	case len(args) == 0 && o.file == "":
		return fmt.Errorf("plan needs -f FILE, Federated<Kind> manifests, or KIND/NAME, a federated resource of the host")
	case len(args) == 1:
		ref, err := kindref.ParseRef(args[0])
		if err != nil {
			return err
		}
		o.ref = ref
	}
	return nil
}

// validate checks the flags that need no cluster.
func (o *options) validate() error {
	var errs []error
	if o.output != outputText && o.output != outputJSON {
		errs = append(errs, fmt.Errorf("-o %s: unknown output format; plan prints json, or by default a report per cluster", o.output))
	}
	if msgs := validation.IsDNS1123Label(o.controlPlane); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--control-plane-namespace: %q is not a namespace name: %s", o.controlPlane, strings.Join(msgs, "; ")))
	}
	if o.namespace != "" {
		if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("-n: %q is not a namespace name: %s", o.namespace, strings.Join(msgs, "; ")))
		}
	}
	if r := typesv1beta1.Remediation(o.remediation); r != typesv1beta1.RemediationEnforce && r != typesv1beta1.RemediationAlert {
		errs = append(errs, fmt.Errorf("--default-remediation %s: must be Enforce or Alert", o.remediation))
	}
	if _, err := scheduler.Registry().ParseEnabled(o.plugins); err != nil {
		errs = append(errs, fmt.Errorf("--plugins: %w", err))
	}
	for _, c := range o.down {
		if msgs := validation.IsDNS1123Label(c); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--what-if-down %q is not a cluster name: %s", c, strings.Join(msgs, "; ")))
		}
	}
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	networks, err := egress.ParseNetworks(o.memberNets)
	if err != nil {
		errs = append(errs, fmt.Errorf("--member-networks: %w", err))
	}
	o.networks = networks
	return errors.Join(errs...)
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	var manifests []manifest.Object
	if o.file != "" {
		m, err := manifest.Read(o.file, s.In)
		if errors.Is(err, manifest.ErrNoObject) {
			err = fmt.Errorf("%w; plan takes Federated<Kind> manifests", err)
		}
		if err != nil {
			return streams.UsageError(err)
		}
		manifests = m
	}
	host, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	namespace, err := kubeconfig.Namespace(o.namespace, o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	p, err := newPlanner(host, o)
	if err != nil {
		return err
	}
	subjects, err := p.subjects(ctx, o, manifests, namespace)
	if err != nil {
		return err
	}
	var reports []*planreport.Report
	for _, sub := range subjects {
		report, err := p.plan(ctx, sub)
		if err != nil {
			return err
		}
		reports = append(reports, report)
	}
	if err := planreport.Write(s.Out, o.output == outputJSON, reports); err != nil {
		return err
	}
	return outcome(reports)
}

// exitCode gives err the exit code of an error of plan: any error that has
// none is exitError, so that 1 only ever means "changes".
func exitCode(err error) error {
	var exit *streams.ExitError
	if err == nil || errors.As(err, &exit) {
		return err
	}
	return &streams.ExitError{Code: exitError, Err: err}
}
