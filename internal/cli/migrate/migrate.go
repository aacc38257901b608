// Package migrate implements `fedwarden migrate kubefed`: it moves a host
// cluster from KubeFed v0.10.0 to Fedwarden, previews the move with
// --dry-run, and undoes it with --rollback.
package migrate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/spf13/cobra"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/migrate"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// ExitBlocked is the exit code of a migration that findings block (the
// plan says which), with or without --dry-run.
const ExitBlocked = 3

// options are the flags of `migrate kubefed`.
type options struct {
	host               kubeconfig.Source
	namespace          string
	dryRun             bool
	output             string
	rollback           bool
	stateDigest        string
	defaultRemediation string
	stopTimeout        time.Duration
	timeout            time.Duration
	fedwardenLease     string
	rejoin             bool
	memberKubeconfig   string
	propagateRBAC      bool
	resources          []string
}

const long = `Migrate kubefed moves the host cluster from KubeFed v0.10.0 to Fedwarden, writing
nothing to any member cluster (with --rejoin, nothing but Fedwarden's own identity
there: never a propagated copy).

It first reads KubeFed's install in --namespace: its KubeFedConfig, KubeFedClusters
and their Secrets (only the names of their keys: no credential is printed),
FederatedTypeConfigs, the federated resources of each type,
ReplicaSchedulingPreferences and PropagatedVersions. With --dry-run it prints
that inventory, what the migration will do, and what it cannot carry over, each
with the reason, and changes nothing.

Without --dry-run it hands over:
  1. saves what it removes or replaces in the Secret fedwarden-migrate-kubefed
     of --namespace, which --rollback reads, and prints the digest of what it
     saved: keep it, --rollback asks for it;
  2. scales KubeFed's Deployment kubefed-controller-manager to 0 (or, when the
     namespace has none, expects you to stop KubeFed's controller-manager) and
     waits until its leader lock is no longer renewed (--stop-timeout);
  3. deletes KubeFed's webhook configurations;
  4. replaces KubeFed's CRDs with Fedwarden's, keeping every federated resource
     (KubeFed's namespaced FederatedTypeConfigs become cluster-scoped ones), and
     installs Fedwarden's other CRDs and admission policies;
  5. creates a FederatedCluster per KubeFedCluster, using KubeFed's Secret, whose
     token it binds to that cluster, endpoint and CA (annotations only).

By default Fedwarden keeps KubeFed's identity in each member: the token of the
KubeFedCluster's Secret, whose ServiceAccount kubefedctl join bound to a
ClusterRole granting every verb on every resource, as much as cluster-admin.
--rejoin gives Fedwarden its own, least-privilege identity instead: before
anything changes on the host, it creates in each member, exactly as
'fedwarden join' does, the ServiceAccount fedwarden-NAME, its token Secret
fedwarden-NAME-token, and the ClusterRole and ClusterRoleBinding
fedwarden:member:NAME (rights on every top-level resource the member serves,
or on those of --resources, no subresources, nothing bound to cluster-admin;
--propagate-rbac adds bind and escalate on roles and clusterroles, as much as
cluster-admin). It creates
them with KubeFed's token for that cluster or, with --member-kubeconfig FILE,
with the credentials of the context of FILE named after the cluster; either
way it reaches the member at the KubeFedCluster's endpoint and verifies it with
the KubeFedCluster's CA bundle. Step 5 then creates the host Secret
fedwarden-NAME-credentials holding the new token, bound to the cluster as join
binds it, and the FederatedCluster uses it. KubeFed's Secret and its
ServiceAccount in the member are left as they are, for --rollback. No token is
printed; --dry-run --rejoin names what would be created and creates nothing.

Then start Fedwarden's controller-manager with the flags the command prints:
they carry over the KubeFedConfig settings that have a Fedwarden equivalent, and
--default-remediation (Alert unless told otherwise), so that the first drift
report can be read before anything is healed. It adopts the copies KubeFed
placed: one that equals what Fedwarden renders is recorded InSync in a
ClusterPropagatedVersion and not written; one that differs is drift.

A finding that blocks the migration (a cluster that skips TLS verification,
a CRD whose scope or stored versions differ...) stops it before any change.

--rollback --state-digest DIGEST puts KubeFed back once Fedwarden's
controller-manager is stopped (it waits until Fedwarden's leader Lease is no
longer renewed): KubeFed's CRDs, FederatedTypeConfigs and webhook
configurations, and its Deployment's replicas. It restores them with your
rights, so it restores only those: webhook configurations named as KubeFed's,
CRDs of the kubefed.io groups, FederatedTypeConfigs of core.kubefed.io in
--namespace. A state holding anything else is refused whole, by name, and so
is a state whose digest is not DIGEST, the one the handover printed: nothing
is restored. --rollback --dry-run lists every object it would restore, what
each webhook calls, and the state's digest, and changes nothing. A state that
an earlier Fedwarden saved in the ConfigMap fedwarden-migrate-kubefed, which
printed no digest, is rolled back the same way: check it with --dry-run, then
pass the digest it prints. Member copies are not touched, nor is Fedwarden's
identity that --rejoin created in the members: 'fedwarden unjoin NAME
--cluster-context CONTEXT' removes it.

Exit codes: 0 done (or planned), 1 error, 2 bad flags, 3 blocked by findings.`

const example = `  # Preview: what is there, what will be done, what is not carried over
  fedwarden migrate kubefed --dry-run

  # The same, as YAML
  fedwarden migrate kubefed --dry-run -o yaml

  # Hand over, then start Fedwarden's controller-manager as printed
  fedwarden migrate kubefed

  # Hand over, giving Fedwarden its own least-privilege identity in each member,
  # created with KubeFed's token, or with the contexts of members.kubeconfig
  # named after the clusters
  fedwarden migrate kubefed --rejoin --dry-run
  fedwarden migrate kubefed --rejoin --member-kubeconfig members.kubeconfig

  # Undo the handover (stop Fedwarden's controller-manager first), with the
  # digest the handover printed; see first what it would restore
  fedwarden migrate kubefed --rollback --dry-run
  fedwarden migrate kubefed --rollback --state-digest sha256:0f1e...`

// NewCommand returns `fedwarden migrate`, whose one subcommand is kubefed.
func NewCommand(s streams.IO) *cobra.Command {
	cmd := cmdline.Setup(&cobra.Command{
		Use:   "migrate",
		Short: "Move a host cluster from another federation to Fedwarden",
		Args:  cmdline.NoArgs,
	})
	cmd.AddCommand(newKubeFedCommand(s))
	return cmd
}

func newKubeFedCommand(s streams.IO) *cobra.Command {
	o := &options{}
	cmd := cmdline.Setup(&cobra.Command{
		Use:     "kubefed",
		Short:   "Move the host from KubeFed v0.10.0 to Fedwarden, with zero member writes",
		Long:    long,
		Example: example,
		Args:    cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), s, o)
		},
	})
	kubeconfig.AddHostFlags(cmd, &o.host)
	f := cmd.Flags()
	f.StringVar(&o.namespace, "namespace", v1beta1.DefaultFederationNamespace, "KubeFed's control-plane namespace, which becomes Fedwarden's")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the inventory and the plan (--rollback: every object it would restore, and the state's digest), and change nothing")
	f.StringVarP(&o.output, "output", "o", "", "format of --dry-run: text (default), yaml or json")
	f.BoolVar(&o.rollback, "rollback", false, "undo the handover: put KubeFed back (needs --state-digest)")
	f.StringVar(&o.stateDigest, "state-digest", "", "--rollback: the digest of the saved state that the handover printed (sha256:...); --rollback restores nothing from a state of another digest")
	f.StringVar(&o.defaultRemediation, "default-remediation", string(typesv1beta1.RemediationAlert), "the --default-remediation to start Fedwarden's controller-manager with: Alert (report drift only) or Enforce")
	f.DurationVar(&o.stopTimeout, "stop-timeout", 2*time.Minute, "how long to wait for KubeFed's controller-manager (--rollback: Fedwarden's) to stop renewing its leader lock")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for any one request, and for a CRD to be Established or gone")
	f.BoolVar(&o.rejoin, "rejoin", false, "give Fedwarden its own least-privilege identity in each member, as 'fedwarden join' does, instead of keeping KubeFed's")
	f.StringVar(&o.memberKubeconfig, "member-kubeconfig", "", "--rejoin: kubeconfig whose contexts, named after the clusters, create Fedwarden's identity in them (default, and for a cluster without a context: KubeFed's token)")
	f.BoolVar(&o.propagateRBAC, "propagate-rbac", false, "--rejoin: also grant bind and escalate on roles and clusterroles, as 'fedwarden join --propagate-rbac'; this amounts to cluster-admin on the member")
	f.StringSliceVar(&o.resources, "resources", nil, "--rejoin: only grant Fedwarden's identity rights on these resources, as resource[.group], as 'fedwarden join --resources' (default every resource the member serves)")
	f.StringVar(&o.fedwardenLease, "fedwarden-leader-election-id", "fedwarden-controller-manager", "--rollback: the leader Lease of Fedwarden's controller-manager (its --leader-election-id)")
	return cmd
}

func (o *options) validate() error {
	var errs []error
	if o.output != "" && !o.dryRun {
		errs = append(errs, fmt.Errorf("--output %q needs --dry-run: only a dry run prints the plan", o.output))
	} else {
		errs = append(errs, manifest.ValidateFormat(o.output))
	}
	if o.stateDigest != "" && !o.rollback {
		errs = append(errs, errors.New("--state-digest needs --rollback: only the rollback reads the saved state"))
	}
	if o.stateDigest != "" && !stateDigest.MatchString(o.stateDigest) {
		errs = append(errs, fmt.Errorf("--state-digest %q is not a digest as the handover prints it: sha256: and 64 hexadecimal digits", o.stateDigest))
	}
	if o.rejoin && o.rollback {
		errs = append(errs, errors.New("--rejoin and --rollback do not go together: --rollback leaves Fedwarden's identity in the members"))
	}
	if !o.rejoin && o.memberKubeconfig != "" {
		errs = append(errs, errors.New("--member-kubeconfig needs --rejoin: only re-joining uses the members' credentials"))
	}
	if !o.rejoin && o.propagateRBAC {
		errs = append(errs, errors.New("--propagate-rbac needs --rejoin: without it Fedwarden keeps KubeFed's identity"))
	}
	if !o.rejoin && len(o.resources) > 0 {
		errs = append(errs, errors.New("--resources needs --rejoin: without it Fedwarden keeps KubeFed's identity"))
	}
	if _, err := registration.ParseResources(o.resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	switch typesv1beta1.Remediation(o.defaultRemediation) {
	case typesv1beta1.RemediationAlert, typesv1beta1.RemediationEnforce:
	default:
		errs = append(errs, fmt.Errorf("--default-remediation must be Enforce or Alert, not %q", o.defaultRemediation))
	}
	errs = append(errs, cmdline.PositiveDuration("--stop-timeout", o.stopTimeout), cmdline.PositiveDuration("--timeout", o.timeout))
	return errors.Join(errs...)
}

func run(ctx context.Context, s streams.IO, o *options) error {
	if err := o.validate(); err != nil {
		return streams.UsageError(err)
	}
	cluster, err := kubeconfig.Load(o.host)
	if err != nil {
		return streams.UsageError(err)
	}
	host, err := newHost(s, cluster, o)
	if err != nil {
		return err
	}
	if o.rollback && o.dryRun {
		return reviewRollback(ctx, s, host, o)
	}
	if o.rollback {
		return host.Rollback(ctx, migrate.RollbackOptions{Namespace: o.namespace, FedwardenLease: o.fedwardenLease, StateDigest: o.stateDigest})
	}
	c, err := host.NewClient()
	if err != nil {
		return err
	}
	inv, err := migrate.Read(ctx, c, o.namespace)
	if err != nil {
		return err
	}
	opts, err := o.planOptions()
	if err != nil {
		return streams.UsageError(err)
	}
	plan := migrate.NewPlan(inv, opts)
	if o.dryRun {
		if err := printPlan(s.Out, plan, o.output); err != nil {
			return err
		}
		return blocked(plan)
	}
	if err := blocked(plan); err != nil {
		printFindings(s.ErrOut, "Blockers (fix these, then run the migration again)", plan.Blockers)
		return err
	}
	if o.rejoin {
		host.Rejoin = rejoiner(s, o)
	}
	digest, err := host.Handover(ctx, plan)
	if err != nil {
		return err
	}
	printNext(s.Out, plan, cluster.File, digest)
	return nil
}

// reviewRollback prints what --rollback would restore and the state's
// digest, and writes nothing. It fails, after printing, when the state
// holds what no handover saves, or is not of --state-digest when given.
func reviewRollback(ctx context.Context, s streams.IO, host *migrate.Host, o *options) error {
	r, err := host.ReviewRollback(ctx, o.namespace)
	if err != nil {
		return err
	}
	if err := printReview(s.Out, r, o.namespace, o.output); err != nil {
		return err
	}
	if err := r.Refusal(); err != nil {
		return err
	}
	if o.stateDigest != "" {
		return r.CheckDigest(o.stateDigest)
	}
	return nil
}

// stateDigest is the form of a state's digest.
var stateDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// blocked returns the error of a plan with blockers, nil for one without.
func blocked(p *migrate.Plan) error {
	if len(p.Blockers) == 0 {
		return nil
	}
	return &streams.ExitError{Code: ExitBlocked, Err: fmt.Errorf("the migration is blocked by %d finding(s); nothing was changed", len(p.Blockers))}
}

// newHost returns the host's clients; requests give up after o.timeout.
func newHost(s streams.IO, cluster *kubeconfig.Cluster, o *options) (*migrate.Host, error) {
	_, disco, err := cluster.Clients(o.timeout)
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(cluster.Config)
	if err != nil {
		return nil, fmt.Errorf("creating a CRD client for context %q: %w", cluster.Context, err)
	}
	return &migrate.Host{
		NewClient:   func() (client.Client, error) { return cluster.Client(o.timeout) },
		CRDs:        ext.ApiextensionsV1().CustomResourceDefinitions(),
		Disco:       disco,
		Out:         s.ErrOut,
		StopTimeout: o.stopTimeout,
		Timeout:     o.timeout,
	}, nil
}

// planOptions returns the choices that shape the plan; with
// --member-kubeconfig, it reads the names of its contexts.
func (o *options) planOptions() (migrate.Options, error) {
	opts := migrate.Options{
		DefaultRemediation: typesv1beta1.Remediation(o.defaultRemediation),
		Rejoin:             o.rejoin,
		MemberKubeconfig:   o.memberKubeconfig,
		PropagateRBAC:      o.propagateRBAC,
	}
	var err error
	if opts.Resources, err = registration.ParseResources(o.resources); err != nil {
		return opts, fmt.Errorf("--resources: %w", err)
	}
	if o.memberKubeconfig == "" {
		return opts, nil
	}
	raw, err := clientcmd.LoadFromFile(o.memberKubeconfig)
	if err != nil {
		return opts, fmt.Errorf("--member-kubeconfig: %w", err)
	}
	opts.MemberContexts = slices.Sorted(maps.Keys(raw.Contexts))
	return opts, nil
}

// rejoiner creates Fedwarden's identity in a member as `fedwarden join`
// does, its progress on stderr.
func rejoiner(s streams.IO, o *options) *migrate.Rejoiner {
	return &migrate.Rejoiner{
		MemberConfig: func(context string) (*rest.Config, error) {
			c, err := kubeconfig.Load(kubeconfig.Source{Path: o.memberKubeconfig, Context: context, PathFlag: "--member-kubeconfig"})
			if err != nil {
				return nil, err
			}
			return c.Config, nil
		},
		CreateIdentity: func(ctx context.Context, cfg *rest.Config, spec registration.Spec) ([]byte, error) {
			member := &kubeconfig.Cluster{Config: cfg, Context: spec.Name, Server: cfg.Host, CAData: cfg.CAData}
			return join.CreatePushIdentity(ctx, member, spec, s.ErrOut, o.timeout)
		},
	}
}
