// Package join implements `fedwarden join`: it makes a cluster a member of
// the federation, by creating an identity for the host in the member and
// the credentials and FederatedCluster in the host.
package join

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/version"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/manifest"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/streams"
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

	// Pull mode only.
	agentKubeconfig    string
	agentHostServer    string
	agentImage         string
	printAgentManifest bool
	// set tells which flags the command line gave.
	set func(flag string) bool
}

// Flags of pull mode.
const (
	flagAgentKubeconfig    = "agent-kubeconfig"
	flagAgentHostServer    = "agent-host-server"
	flagAgentImage         = "agent-image"
	flagPrintAgentManifest = "print-agent-manifest"
)

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
API endpoint and CA bundle come from the member's kubeconfig. The Secret's
annotations fedwarden.io/credentials-cluster, -endpoint and -ca bind the token
to that cluster, endpoint and CA bundle: the controller sends it nowhere else,
whatever the FederatedCluster is edited to say. Run join again to bind a
Secret an older join wrote, or after the member's endpoint or CA changed. That kubeconfig
must use https and verify the server (certificate-authority-data, or none for
the system roots): Fedwarden never skips TLS verification.

Pull mode (--sync-mode Pull) gives the host no credentials of the member.
Instead an agent runs in the member and reads from the host what is placed on
its cluster. In the host's control-plane namespace join creates the agent's
ServiceAccount fedwarden-agent-NAME with a long-lived token Secret
fedwarden-agent-NAME-token, binds it (ClusterRoleBinding fedwarden:agent:NAME)
to the shared ClusterRole fedwarden:agent (read FederatedTypeConfigs and every
resource of types.kubefed.io, patch ClusterPropagatedVersion status, write
Events), creates the Lease fedwarden-agent-NAME that the agent renews (a Role
and RoleBinding fedwarden:agent:NAME grant it that Lease only), the admission
policy fedwarden-agent-isolation, which lets an agent change nothing of a
ClusterPropagatedVersion but its own cluster's entry of status.clusterVersions,
and the FederatedCluster NAME without spec.secretRef. It writes the agent's
kubeconfig of the host (server and CA of the host kubeconfig, or the server
--agent-host-server when the agent reaches the host by another name, and the
agent's token) to --agent-kubeconfig, readable by its owner only. In the member it then
creates the ServiceAccount, ClusterRole and ClusterRoleBinding fedwarden-agent
(the same rights as a Push member's, see above), the Secret
fedwarden-agent-host holding that kubeconfig, and the Deployment
fedwarden-agent running --agent-image. With --print-agent-manifest it applies
nothing to the member and prints the member's manifest instead, without the
Secret: create it from the --agent-kubeconfig file as join then says.

Everything is applied server-side: running join again updates the objects and
changes nothing when nothing changed. The tokens are never printed.

Kubeconfigs are found as kubectl finds them: the flag, else $KUBECONFIG, else
~/.kube/config; the context defaults to the current one.

Exit codes: 0 joined, 1 error, 2 bad flags or arguments.`

const example = `  # Join the cluster of context kind-east, using the host of the current context
  fedwarden join east --cluster-context kind-east --region us-east-1 --zone us-east-1a

  # Only allow Deployments, ConfigMaps and Services to be propagated to it
  fedwarden join east --cluster-context kind-east --resources deployments.apps,configmaps,services

  # Show what would be created, without changing anything
  fedwarden join east --cluster-context kind-east --dry-run -o yaml

  # Join in Pull mode: an agent in the member reads from the host
  fedwarden join edge --sync-mode Pull --cluster-context kind-edge --agent-kubeconfig edge-agent.kubeconfig

  # Pull mode for a member join cannot write to: print its manifest, apply it there
  fedwarden join edge --sync-mode Pull --cluster-context kind-edge --agent-kubeconfig edge-agent.kubeconfig \
      --resources deployments.apps,configmaps --print-agent-manifest > edge-agent.yaml`

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
			o.set = cmd.Flags().Changed
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
	f.StringVar(&o.syncMode, "sync-mode", string(v1beta1.SyncModePush), "Push: the host writes to the member; Pull: an agent in the member reads from the host")
	f.StringVar(&o.region, "region", "", "region the cluster runs in")
	f.StringSliceVar(&o.zones, "zone", nil, "zone the cluster spans (repeatable, or comma-separated)")
	f.StringToStringVar(&o.labels, "label", nil, "label key=value of the FederatedCluster (repeatable, or comma-separated)")
	f.StringSliceVar(&o.resources, "resources", nil, "only allow these resources, as resource[.group], to be propagated (repeatable, or comma-separated; default all)")
	f.BoolVar(&o.rbac, "propagate-rbac", false, "also grant bind and escalate on roles and clusterroles, so that RBAC objects can be propagated; this amounts to cluster-admin on the member")
	f.StringVar(&o.namespace, "namespace", v1beta1.DefaultFederationNamespace, "control-plane namespace, in the host and in the member")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the objects that would be created, and change nothing")
	f.StringVarP(&o.output, "output", "o", "", "format of --dry-run: yaml (default) or json")
	f.BoolVar(&o.wait, "wait", true, "wait until the FederatedCluster is Ready (Pull: once its agent renews its Lease; "+
		"false by default with --"+flagPrintAgentManifest+", as no agent runs yet)")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "how long to wait for the member's token, for the cluster to be Ready, and for any one request")
	f.StringVar(&o.agentKubeconfig, flagAgentKubeconfig, "", "Pull: write the agent's kubeconfig of the host to this file (mode 0600; it holds the agent's token)")
	f.StringVar(&o.agentHostServer, flagAgentHostServer, "", "Pull: the host API server's https URL as the agent reaches it, in its kubeconfig "+
		"(default the host kubeconfig's server; its certificate must be valid for this name too)")
	f.StringVar(&o.agentImage, flagAgentImage, defaultAgentImage(), "Pull: image of the agent's Deployment in the member")
	f.BoolVar(&o.printAgentManifest, flagPrintAgentManifest, false, "Pull: apply nothing to the member; print its manifest (without the kubeconfig Secret) instead")
}

// defaultAgentImage is the image of this CLI's release.
func defaultAgentImage() string {
	return registration.AgentImageRepository + ":" + version.Version
}

// pull reports whether the cluster joins in Pull mode.
func (o *options) pull() bool { return o.syncMode == string(v1beta1.SyncModePull) }

// flagSet reports whether the command line gave flag.
func (o *options) flagSet(flag string) bool { return o.set != nil && o.set(flag) }

// validate checks the flags that need no kubeconfig.
func (o *options) validate() error {
	var errs []error
	if o.output != "" && !o.dryRun {
		errs = append(errs, fmt.Errorf("--output %q needs --dry-run: join prints objects only in a dry run", o.output))
	} else {
		errs = append(errs, manifest.ValidateFormat(o.output))
	}
	errs = append(errs, o.validatePull())
	errs = append(errs, cmdline.PositiveDuration("--timeout", o.timeout))
	if _, err := registration.ParseResources(o.resources); err != nil {
		errs = append(errs, fmt.Errorf("--resources: %w", err))
	}
	return errors.Join(errs...)
}

// validatePull checks the flags of pull mode: required with Pull, refused
// with Push.
func (o *options) validatePull() error {
	if !o.pull() {
		var errs []error
		for _, flag := range []string{flagAgentKubeconfig, flagAgentHostServer, flagAgentImage, flagPrintAgentManifest} {
			if o.flagSet(flag) {
				errs = append(errs, fmt.Errorf("--%s is only for --sync-mode Pull: a Push cluster has no agent", flag))
			}
		}
		return errors.Join(errs...)
	}
	var errs []error
	if o.agentKubeconfig == "" && !o.dryRun {
		errs = append(errs, fmt.Errorf("--sync-mode Pull needs --%s FILE: join writes the agent's kubeconfig of the host there", flagAgentKubeconfig))
	}
	if o.agentImage == "" {
		errs = append(errs, fmt.Errorf("--%s must not be empty", flagAgentImage))
	}
	if o.agentHostServer != "" {
		if u, err := url.Parse(o.agentHostServer); err != nil || u.Scheme != "https" || u.Hostname() == "" {
			errs = append(errs, fmt.Errorf("--%s %q is not an https:// URL with a host: the agent verifies the host's certificate", flagAgentHostServer, o.agentHostServer))
		}
	}
	return errors.Join(errs...)
}

// checkHost checks the host's kubeconfig, from which a Pull cluster's agent
// gets the host's server and CA.
func (o *options) checkHost(host *kubeconfig.Cluster) error {
	if !o.pull() || !host.Insecure {
		return nil
	}
	return fmt.Errorf("context %q of kubeconfig %s sets insecure-skip-tls-verify: the agent of a Pull cluster verifies the host's certificate, "+
		"so it needs a host kubeconfig with certificate-authority-data (or none, for a certificate the system roots trust)", host.Context, host.File)
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
	if err := o.checkHost(host); err != nil {
		return streams.UsageError(err)
	}
	spec, err := o.spec(member)
	if err != nil {
		return streams.UsageError(err)
	}
	if o.pull() && o.printAgentManifest && !o.flagSet("wait") {
		o.wait = false // nothing can be running yet
	}
	if o.dryRun {
		if len(spec.Resources) == 0 {
			fmt.Fprintln(s.ErrOut, "dry run: without --resources, join grants write rights on every resource the member serves, "+
				"read from the member's discovery when it runs; those rules are not shown here")
		}
		if o.pull() {
			return printPullObjects(s.Out, spec, o.agentImage, o.output)
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
