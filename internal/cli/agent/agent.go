// Package agent implements `fedwarden agent`, the member-side agent of a
// Pull cluster.
package agent

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/agent"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memorylimit"
	"github.com/fedwarden/fedwarden/internal/metricsendpoint"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/streams"
)

type options struct {
	hostKubeconfig string
	hostContext    string
	kubeconfig     string
	context        string
	hostQPS        float32
	hostBurst      int
	memberQPS      float32
	memberBurst    int
	metrics        metricsendpoint.Options
	agent          agent.Options
	memory         memorylimit.Options
	zap            zap.Options
}

const long = `Agent runs inside a Pull cluster (joined with 'fedwarden join --sync-mode Pull')
and does there what the host's controller-manager does for Push clusters:

  - it watches, on the host, the ClusterPropagatedVersions that place resources on
    its cluster (--cluster-name) and the federated resources they track;
  - it writes each resource's template, with its cluster's overrides and replicas,
    to its own cluster, with the same code as push mode: one server-side apply per
    change, nothing written when nothing changed;
  - it detects copies changed or deleted in its cluster and re-applies or only reports
    them, as the resource's driftPolicy (or --default-remediation) says;
  - it reports its cluster's entry of each CPV's status.clusterVersions (server-side
    apply with its own field manager; an admission policy on the host keeps it from
    touching any other cluster's entry);
  - it renews the Lease fedwarden-agent-NAME in the host's control-plane namespace;
    the host marks the cluster Ready while the Lease is renewed in time.

With --metrics-secure, /metrics is HTTPS and answers only callers this cluster's
API server authenticates and authorizes to get /metrics; the agent's identity
here then needs the right to create tokenreviews and subjectaccessreviews.

Drift notifications of this cluster's copies come from the agent: --notify-webhook
and the other --notify-* flags work as the controller-manager's, which sends none
for a Pull cluster. The sinks must be reachable from this cluster.

The host never connects to the member. When the host cannot be reached, the agent
keeps its cluster's copies as they are, goes on healing local drift from what it
last read, and reports once the host is back.

--host-kubeconfig is the kubeconfig 'fedwarden join --agent-kubeconfig' wrote. The
member's own credentials come from --kubeconfig, else the pod's ServiceAccount
(in-cluster), else $KUBECONFIG or ~/.kube/config.

Exit codes: 0 stopped by a signal, 1 error, 2 bad flags.`

// NewCommand returns `fedwarden agent`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{
		agent: agent.Options{
			Namespace:     corev1beta1.DefaultFederationNamespace,
			LeaseDuration: 40 * time.Second,
			RenewInterval: 10 * time.Second,
			Propagation:   propagation.DefaultOptions(),
			Notify:        notify.DefaultOptions(),
		},
		metrics: metricsendpoint.Options{BindAddress: metricsendpoint.DefaultAddress(8080)},
		zap:     zap.Options{DestWriter: s.ErrOut},
	}
	cmd := cmdline.Setup(&cobra.Command{
		Use:         "agent --cluster-name NAME --host-kubeconfig FILE",
		Short:       "Run the member-side agent of a Pull cluster",
		Long:        long,
		Args:        cmdline.NoArgs,
		Annotations: map[string]string{streams.AnnotationOwnLogger: ""},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return streams.UsageError(err)
			}
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
			o.memory.Apply(ctrl.Log)
			host, member, err := o.configs()
			if err != nil {
				return err
			}
			// Scrapers run in this cluster: its API server checks them.
			o.agent.Metrics = o.metrics.Server(member)
			return agent.Run(cmd.Context(), host, member, o.agent)
		},
	})
	addFlags(cmd, o)
	return cmd
}

func addFlags(cmd *cobra.Command, o *options) {
	f := cmd.Flags()
	f.StringVar(&o.agent.Cluster, "cluster-name", "", "name of this cluster's FederatedCluster on the host (required)")
	f.StringVar(&o.hostKubeconfig, "host-kubeconfig", "", "kubeconfig of the host, as 'fedwarden join --agent-kubeconfig' wrote it (required)")
	f.StringVar(&o.hostContext, "host-context", "", "context of --host-kubeconfig (default: its current context)")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of this cluster (default: in-cluster, $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.context, "context", "", "context of --kubeconfig (default: its current context)")
	f.StringVar(&o.agent.Namespace, "namespace", o.agent.Namespace, "the host's control-plane namespace, where the agent's Lease is")
	f.StringVar(&o.agent.Holder, "holder-identity", "", "who holds the Lease (default: the host name, which is the pod name in a pod)")
	f.DurationVar(&o.agent.LeaseDuration, "lease-duration", o.agent.LeaseDuration, "how long the host waits for a Lease renewal before it marks the cluster not Ready (10s to 10m: the host's admission policy refuses others)")
	f.DurationVar(&o.agent.RenewInterval, "lease-renew-interval", o.agent.RenewInterval, "how often the Lease is renewed")
	o.metrics.AddFlags(f, "this cluster")
	f.StringVar(&o.agent.ProbeAddr, "health-probe-bind-address", metricsendpoint.DefaultAddress(8081), "address of the /healthz and /readyz endpoints (default: every interface in a pod, 127.0.0.1 elsewhere); 0 disables them")
	f.IntVar(&o.agent.Propagation.Workers, "workers", o.agent.Propagation.Workers, "federated resources of one type synced at the same time")
	f.DurationVar(&o.agent.Propagation.RetryPeriod, "retry-period", o.agent.Propagation.RetryPeriod, "how soon a resource that could not be written is synced again")
	f.DurationVar(&o.agent.Propagation.MemberListTimeout, "member-list-timeout", o.agent.Propagation.MemberListTimeout, "how long the first list of a type in this cluster may take")
	f.StringVar((*string)(&o.agent.Propagation.DefaultRemediation), "default-remediation", string(o.agent.Propagation.DefaultRemediation), "what to do when a copy drifts, for resources whose driftPolicy names nothing: Enforce or Alert")
	f.DurationVar(&o.agent.Propagation.MaxWaiver, "max-waiver-duration", o.agent.Propagation.MaxWaiver, "how far ahead a drift waiver (spec.driftPolicy.waivers) may expire and be honoured in this cluster, as the controller-manager's flag of that name")
	f.DurationVar(&o.agent.Propagation.ResyncPeriod, "resync-period", o.agent.Propagation.ResyncPeriod, "how often every resource is compared with its copy again even without a change event (0 disables)")
	o.agent.Notify.AddFlags(f)
	f.Float32Var(&o.hostQPS, "host-api-qps", 50, "queries per second towards the host API server")
	f.IntVar(&o.hostBurst, "host-api-burst", 100, "burst of queries towards the host API server")
	f.Float32Var(&o.memberQPS, "kube-api-qps", 300, "queries per second towards this cluster's API server")
	f.IntVar(&o.memberBurst, "kube-api-burst", 600, "burst of queries towards this cluster's API server")
	o.memory.AddFlags(f)
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	f.AddGoFlagSet(zapFlags)
}

func (o *options) validate() error {
	if err := o.memory.Validate(); err != nil {
		return err
	}
	if o.hostKubeconfig == "" {
		return fmt.Errorf("--host-kubeconfig is required: the kubeconfig 'fedwarden join %s --sync-mode Pull --agent-kubeconfig FILE' wrote", o.agent.Cluster)
	}
	if o.agent.Holder == "" {
		name, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("--holder-identity: reading the host name: %w", err)
		}
		o.agent.Holder = name
	}
	if o.hostQPS <= 0 || o.hostBurst < 1 || o.memberQPS <= 0 || o.memberBurst < 1 {
		return fmt.Errorf("--host-api-qps, --host-api-burst, --kube-api-qps and --kube-api-burst must be positive")
	}
	if err := o.metrics.Validate(); err != nil {
		return err
	}
	if err := o.agent.Notify.Validate(); err != nil {
		return err
	}
	return o.agent.Validate()
}

// configs loads the host's and the member's client configurations.
func (o *options) configs() (host, member *rest.Config, err error) {
	host, err = load(o.hostKubeconfig, o.hostContext)
	if err != nil {
		return nil, nil, fmt.Errorf("loading --host-kubeconfig: %w", err)
	}
	if host.Insecure {
		return nil, nil, fmt.Errorf("--host-kubeconfig sets insecure-skip-tls-verify: the agent verifies the host's certificate")
	}
	member, err = load(o.kubeconfig, o.context)
	if err != nil {
		return nil, nil, fmt.Errorf("loading this cluster's credentials: %w", err)
	}
	host.QPS, host.Burst, host.UserAgent = o.hostQPS, o.hostBurst, "fedwarden-agent/"+o.agent.Cluster
	member.QPS, member.Burst, member.UserAgent = o.memberQPS, o.memberBurst, "fedwarden-agent"
	return host, member, nil
}

// load reads a kubeconfig as kubectl does; with no file, in-cluster
// credentials come first.
func load(file, context string) (*rest.Config, error) {
	if file == "" && context == "" {
		if cfg, err := rest.InClusterConfig(); err == nil {
			return cfg, nil
		}
	}
	return kubeconfig.LoadConfig(kubeconfig.Source{Path: file, Context: context})
}
