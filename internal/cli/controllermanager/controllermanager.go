// Package controllermanager implements `fedwarden controller-manager`: the
// host-side controllers in one controller-runtime manager, with leader
// election, Prometheus metrics and health endpoints.
package controllermanager

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/clusterhealth"
	"github.com/fedwarden/fedwarden/internal/cmdline"
	copyhealth "github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/hostcache"
	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/memorylimit"
	"github.com/fedwarden/fedwarden/internal/metricsendpoint"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/scheduler"
	"github.com/fedwarden/fedwarden/internal/scheduler/capacitysource"
	"github.com/fedwarden/fedwarden/internal/scheme"
	"github.com/fedwarden/fedwarden/internal/shard"
	"github.com/fedwarden/fedwarden/internal/streams"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
)

// options are the command's flags.
type options struct {
	kubeconfig string
	context    string
	namespace  string
	metrics    metricsendpoint.Options
	probeAddr  string
	pprofAddr  string
	// dependencies runs the dependencies stage (--propagate-dependencies).
	dependencies bool
	// shareClusters makes the replicas share the Push clusters
	// (--share-clusters), with the shard's timings.
	shareClusters  bool
	shard          shard.Options
	leaderElect    bool
	leaderElectID  string
	hostQPS        float32
	hostBurst      int
	memberQPS      float32
	memberBurst    int
	breaker        clustercache.BreakerOptions
	memberNets     []string
	networks       egress.Networks
	health         clusterhealth.Options
	propagation    propagation.Options
	notify         notify.Options
	plugins        string
	capacityDelay  time.Duration
	memory         memorylimit.Options
	zap            zap.Options
	startupTimeout time.Duration
}

// NewCommand returns `fedwarden controller-manager`.
func NewCommand(s streams.IO) *cobra.Command {
	o := &options{
		namespace: corev1beta1.DefaultFederationNamespace,
		metrics:   metricsendpoint.Options{BindAddress: metricsendpoint.DefaultAddress(8080)},
		health: clusterhealth.Options{
			Period:     10 * time.Second,
			Timeout:    3 * time.Second,
			Thresholds: clusterhealth.Thresholds{Failure: 3, Success: 1},
			Workers:    8,
		},
		propagation: propagation.DefaultOptions(),
		breaker:     clustercache.DefaultBreakerOptions(),
		notify:      notify.DefaultOptions(),
		shard:       shard.DefaultOptions(),
		zap:         zap.Options{DestWriter: s.ErrOut},
	}
	cmd := cmdline.Setup(&cobra.Command{
		Use:   "controller-manager",
		Short: "Run the host-side controllers: cluster health, federation and propagation",
		Long: "Runs Fedwarden's host-side controllers against the host cluster:\n" +
			"  - cluster health: probes every member's /readyz (falling back to /healthz) and keeps\n" +
			"    the FederatedCluster conditions Ready, Offline and ConfigMalformed and\n" +
			"    status.kubernetesVersion, writing status only when they change;\n" +
			"  - federation: runs a propagation controller for every enabled FederatedTypeConfig,\n" +
			"    started and stopped as types are enabled and disabled;\n" +
			"  - propagation: writes each Federated<Kind>'s template, with each cluster's overrides,\n" +
			"    to the clusters it is placed on, and records the versions in its\n" +
			"    ClusterPropagatedVersion;\n" +
			"  - scheduling: before each sync, the scheduler's plugins (--plugins) choose the clusters\n" +
			"    and divide replicas (ReplicaSchedulingPreference); the decision is recorded in the\n" +
			"    CPV's spec.clusters and explained in the Scheduled condition;\n" +
			"  - drift: member copies changed or deleted by someone else are found on the member's\n" +
			"    watch events (and every --resync-period), recorded per cluster in the CPV, and\n" +
			"    re-applied or only reported (driftPolicy, --default-remediation); each transition is\n" +
			"    POSTed as a CloudEvent to every --notify-webhook whose filter it passes.\n\n" +
			"Serves Prometheus metrics on --metrics-bind-address and /healthz, /readyz on\n" +
			"--health-probe-bind-address. With --metrics-secure, /metrics is HTTPS, and answers only\n" +
			"callers the host's API server authenticates and authorizes to get /metrics (the Helm\n" +
			"chart's default; its ClusterRole fedwarden-metrics-reader grants that); it needs the\n" +
			"right to create tokenreviews and subjectaccessreviews. With --leader-elect, several\n" +
			"replicas may run; one works.",
		Args:        cmdline.NoArgs,
		Annotations: map[string]string{streams.AnnotationOwnLogger: ""},
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return streams.UsageError(err)
			}
			return run(cmd.Context(), o)
		},
	})
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the host cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster)")
	f.StringVar(&o.context, "context", "", "kubeconfig context of the host cluster (default: the current context)")
	f.StringVar(&o.namespace, "namespace", o.namespace, "control-plane namespace: member credential Secrets and the leader-election Lease live here")
	o.metrics.AddFlags(f, "the host")
	f.StringVar(&o.probeAddr, "health-probe-bind-address", metricsendpoint.DefaultAddress(8081), "address of the /healthz and /readyz endpoints (default: every interface in a pod, 127.0.0.1 elsewhere); 0 disables them")
	f.StringVar(&o.pprofAddr, "pprof-bind-address", "0", "address of Go's /debug/pprof endpoints (CPU and heap profiles), unauthenticated: bind it to 127.0.0.1 only; 0 (the default) disables them")
	f.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among replicas with a Lease, so that only one works at a time")
	f.StringVar(&o.health.Identity, "replica-name", "", "this replica's name, shown in the status.servedBy of the clusters it serves (default: $POD_NAME, which the Helm chart sets, or the host name)")
	f.BoolVar(&o.shareClusters, "share-clusters", false, "share the Push member clusters among the replicas: each announces itself with a Lease (fedwarden-replica-NAME) in the control-plane namespace, "+
		"and serves the clusters that consistent hashing over the live replicas gives it: it probes them, writes their copies and their CPV entries; the leader places every resource; "+
		"a replica that stops renewing its Lease has its clusters taken over after --replica-lease-duration (docs/sharding.md); needs --leader-elect")
	f.DurationVar(&o.shard.LeaseDuration, "replica-lease-duration", o.shard.LeaseDuration, "with --share-clusters: how long the others wait after a replica's last renewal before they take its clusters over")
	f.DurationVar(&o.shard.RenewDeadline, "replica-renew-deadline", o.shard.RenewDeadline, "with --share-clusters: how long a replica keeps serving its clusters without a successful renewal of its Lease")
	f.DurationVar(&o.shard.RetryPeriod, "replica-retry-period", o.shard.RetryPeriod, "with --share-clusters: how often a replica renews its Lease")
	f.StringVar(&o.leaderElectID, "leader-election-id", "fedwarden-controller-manager", "name of the leader-election Lease")
	f.Float32Var(&o.hostQPS, "kube-api-qps", 500, "queries per second towards the host API server")
	f.IntVar(&o.hostBurst, "kube-api-burst", 1000, "burst of queries towards the host API server")
	f.Float32Var(&o.memberQPS, "member-api-qps", 300, "queries per second towards each member API server")
	f.IntVar(&o.memberBurst, "member-api-burst", 600, "burst of queries towards each member API server")
	f.DurationVar(&o.breaker.Stall, "member-stall-timeout", o.breaker.Stall, "when requests to a member wait this long with no answer from it in that time, they are cancelled and the member is reported Offline; "+
		"its requests then fail at once until it answers again, so that one hung member holds up no other")
	f.DurationVar(&o.breaker.RequestTimeout, "member-request-timeout", o.breaker.RequestTimeout, "limit of each request to a member that is not a watch")
	f.StringSliceVar(&o.memberNets, "member-networks", nil, "CIDRs member API servers may be reached at, e.g. 10.0.0.0/8,fd00::/8; when set, every other address is refused "+
		"before any packet is sent (and counted in fedwarden_member_dials_refused_total), and endpoints must be IP addresses (hostnames other than localhost are refused without a DNS lookup); default: any address")
	f.IntVar(&o.propagation.Workers, "propagation-workers", o.propagation.Workers, "federated resources of one type synced at the same time")
	f.DurationVar(&o.propagation.RetryPeriod, "propagation-retry-period", o.propagation.RetryPeriod, "how soon a resource that could not reach every cluster is synced again")
	f.DurationVar(&o.propagation.MemberListTimeout, "member-list-timeout", o.propagation.MemberListTimeout, "how long the first list of a type in a member may take")
	f.DurationVar(&o.propagation.HostListTimeout, "host-list-timeout", o.propagation.HostListTimeout, "how long a type's propagation controller waits for its first list of the federated kind on the host "+
		"(as when it may not list it) before it gives up, says so in the FederatedTypeConfig and is started again")
	f.StringVar((*string)(&o.propagation.DefaultRemediation), "default-remediation", string(o.propagation.DefaultRemediation), "what to do when a member's copy drifts, for resources whose driftPolicy names nothing: Enforce (re-apply at once) or Alert (report only)")
	f.DurationVar(&o.propagation.MaxWaiver, "max-waiver-duration", o.propagation.MaxWaiver, "how far ahead a drift waiver (spec.driftPolicy.waivers) may expire and be honoured; one that expires later keeps nothing until it is within this")
	f.DurationVar(&o.propagation.ResyncPeriod, "resync-period", o.propagation.ResyncPeriod, "how often every federated resource is compared with its member copies again even without a change event (0 disables); nothing is written when nothing drifted")
	o.notify.AddFlags(f)
	f.BoolVar(&o.dependencies, "propagate-dependencies", false, "send the ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims a workload's pod template names with it, "+
		"for workloads with spec.propagateDependencies; needs get, list and watch on those kinds in every namespace, and create and delete on their federated kinds (docs/dependencies.md)")
	f.StringVar(&o.plugins, "plugins", scheduler.DefaultPlugins, "scheduler plugins: * for all ("+strings.Join(scheduler.Registry().Names(), ", ")+"), -Name to disable one, e.g. *,-Capacity")
	f.DurationVar(&o.capacityDelay, "capacity-debounce", 5*time.Second, "how long member Node and ResourceQuota changes are gathered before resources are scheduled again")
	f.DurationVar(&o.health.Period, "cluster-health-period", o.health.Period, "time between two health probes of a member cluster")
	f.DurationVar(&o.health.Timeout, "cluster-health-timeout", o.health.Timeout, "timeout of one health probe")
	f.IntVar(&o.health.Thresholds.Failure, "cluster-health-failure-threshold", o.health.Thresholds.Failure, "failed probes in a row before a Ready cluster is marked not Ready")
	f.IntVar(&o.health.Thresholds.Success, "cluster-health-success-threshold", o.health.Thresholds.Success, "successful probes in a row before a not-Ready cluster is marked Ready")
	f.IntVar(&o.health.Workers, "cluster-health-workers", o.health.Workers, "clusters probed at the same time")
	f.DurationVar(&o.startupTimeout, "startup-timeout", 30*time.Second, "how long to try reaching the host at start-up")
	o.memory.AddFlags(f)
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	f.AddGoFlagSet(zapFlags)
	return cmd
}

// replicaName is the default name of this replica: the pod's, which the
// chart passes in $POD_NAME, or the machine's.
func replicaName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

func (o *options) validate() error {
	if err := o.memory.Validate(); err != nil {
		return err
	}
	if err := o.metrics.Validate(); err != nil {
		return err
	}
	o.health.Namespace = o.namespace
	if o.health.Identity == "" {
		o.health.Identity = replicaName()
	}
	if err := o.health.Validate(); err != nil {
		return fmt.Errorf("cluster health flags: %w", err)
	}
	if o.shareClusters {
		if !o.leaderElect {
			return fmt.Errorf("--share-clusters needs --leader-elect: one replica, the leader, places the resources")
		}
		o.shard.Namespace, o.shard.Identity = o.namespace, o.health.Identity
		if err := o.shard.Validate(); err != nil {
			return fmt.Errorf("--share-clusters: %w", err)
		}
	}
	o.propagation.Namespace = o.namespace
	if o.propagation.Workers < 1 || o.propagation.RetryPeriod <= 0 || o.propagation.MemberListTimeout <= 0 || o.propagation.HostListTimeout <= 0 {
		return fmt.Errorf("--propagation-workers must be at least 1, --propagation-retry-period, --member-list-timeout and --host-list-timeout positive")
	}
	if r := o.propagation.DefaultRemediation; r != typesv1beta1.RemediationEnforce && r != typesv1beta1.RemediationAlert {
		return fmt.Errorf("--default-remediation must be Enforce or Alert, not %q", r)
	}
	if o.propagation.ResyncPeriod < 0 {
		return fmt.Errorf("--resync-period must not be negative")
	}
	if o.propagation.MaxWaiver <= 0 {
		return fmt.Errorf("--max-waiver-duration must be positive")
	}
	if err := o.notify.Validate(); err != nil {
		return err
	}
	if _, err := scheduler.Registry().ParseEnabled(o.plugins); err != nil {
		return fmt.Errorf("--plugins: %w", err)
	}
	if err := o.breaker.Validate(); err != nil {
		return fmt.Errorf("--member-stall-timeout, --member-request-timeout: %w", err)
	}
	if o.capacityDelay < 0 {
		return fmt.Errorf("--capacity-debounce must not be negative")
	}
	if o.hostQPS <= 0 || o.hostBurst < 1 || o.memberQPS <= 0 || o.memberBurst < 1 {
		return fmt.Errorf("--kube-api-qps, --kube-api-burst, --member-api-qps and --member-api-burst must be positive")
	}
	networks, err := egress.ParseNetworks(o.memberNets)
	if err != nil {
		return fmt.Errorf("--member-networks: %w", err)
	}
	o.networks = networks
	return nil
}

func run(ctx context.Context, o *options) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	o.memory.Apply(ctrl.Log)
	cfg, err := hostConfig(o)
	if err != nil {
		return err
	}
	s := scheme.New()
	if err := ensureNamespace(ctx, cfg, s, o); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                        s,
		Metrics:                       o.metrics.Server(nil),
		HealthProbeBindAddress:        o.probeAddr,
		PprofBindAddress:              o.pprofAddr,
		LeaderElection:                o.leaderElect,
		LeaderElectionID:              o.leaderElectID,
		LeaderElectionNamespace:       o.namespace,
		LeaderElectionReleaseOnCancel: true,
		GracefulShutdownTimeout:       ptr.To(hostcache.ShutdownTimeout),
		// Federated resources are read as unstructured objects: from the cache too.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		// Objects trimmed of what no controller reads; Secrets and Leases
		// of the control-plane namespace only.
		Cache: hostcache.Options(o.namespace),
	})
	if err != nil {
		return fmt.Errorf("creating the controller manager: %w", err)
	}
	if err := setupControllers(mgr, o); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	ctrl.Log.Info("Starting the controller manager", "namespace", o.namespace, "leaderElection", o.leaderElect, "memberNetworks", o.networks.String(),
		"metricsSecure", o.metrics.Secure)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the controller manager: %w", err)
	}
	return nil
}

func setupControllers(mgr ctrl.Manager, o *options) error {
	members := clustercache.New(clustercache.Options{
		QPS:       o.memberQPS,
		Burst:     o.memberBurst,
		UserAgent: "fedwarden-controller-manager",
		Networks:  o.networks,
		Log:       ctrl.Log.WithName("egress"),
		Breaker:   o.breaker,
	})
	var federation *typeconfig.Reconciler
	sharing, err := setupSharing(mgr, members, o, func() *typeconfig.Reconciler { return federation })
	if err != nil {
		return err
	}
	health := clusterhealth.NewReconciler(mgr.GetClient(), members, mgr.GetEventRecorder(clusterhealth.ControllerName), o.health)
	if err := health.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", clusterhealth.ControllerName, err)
	}
	if sharing != nil {
		sharing.health = health
	}
	capacity := capacitysource.New(members, capacitysource.Options{
		OnChange: func(cluster string) { federation.ResyncAll(cluster) },
		Debounce: o.capacityDelay,
	})
	sched, err := scheduler.New(o.plugins, capacity)
	if err != nil {
		return fmt.Errorf("--plugins: %w", err)
	}
	o.propagation.Scheduler = sched
	if err := setupNotifier(mgr, o); err != nil {
		return err
	}
	if o.propagation.Health, err = copyhealth.New(); err != nil {
		return fmt.Errorf("compiling the built-in health rules: %w", err)
	}
	if err := setupDependencies(mgr, o); err != nil {
		return err
	}
	federation = typeconfig.NewReconciler(mgr, members, o.propagation)
	if sharing != nil {
		if err := sharing.start(mgr, members, o.propagation, federation); err != nil {
			return err
		}
	}
	if err := federation.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", typeconfig.ControllerName, err)
	}
	return nil
}

// setupDependencies gives propagation its dependencies stage under
// --propagate-dependencies.
func setupDependencies(mgr ctrl.Manager, o *options) error {
	if !o.dependencies {
		return nil
	}
	meta, err := dependencies.NewMetadataCache(mgr.GetConfig(), mgr.GetScheme())
	if err != nil {
		return err
	}
	if err := mgr.Add(meta); err != nil {
		return fmt.Errorf("adding the cache of the dependencies' metadata: %w", err)
	}
	o.propagation.Dependencies = dependencies.NewStage(mgr.GetClient(), mgr.GetAPIReader(), meta)
	return nil
}

// setupNotifier runs the drift notifier when --notify-webhook or
// --notify-webhooks-file names a sink.
func setupNotifier(mgr ctrl.Manager, o *options) error {
	n, err := notify.New(o.notify, ctrl.Log.WithName("notify"))
	if err != nil || n == nil {
		return err
	}
	if err := mgr.Add(n); err != nil {
		return fmt.Errorf("adding the drift notifier: %w", err)
	}
	o.propagation.DriftNotifier = n
	return nil
}

func hostConfig(o *options) (*rest.Config, error) {
	cfg, err := kubeconfig.LoadConfig(kubeconfig.Source{Path: o.kubeconfig, Context: o.context})
	if err != nil {
		return nil, fmt.Errorf("loading the host kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = o.hostQPS, o.hostBurst
	cfg.UserAgent = "fedwarden-controller-manager"
	return cfg, nil
}

// ensureNamespace creates the control-plane namespace if it is missing: the
// leader-election Lease lives there. It retries until the host answers or
// the start-up timeout passes.
func ensureNamespace(ctx context.Context, cfg *rest.Config, s *runtime.Scheme, o *options) error {
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("creating the host client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.startupTimeout)
	defer cancel()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.namespace}}
	for {
		err = c.Create(ctx, ns)
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if apierrors.IsForbidden(err) {
			// Without the right to create namespaces, it has to exist already.
			if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); err == nil {
				return nil
			}
			return fmt.Errorf("the control-plane namespace %s does not exist and may not be created: %w", o.namespace, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reaching the host API server: %w", err)
		case <-time.After(time.Second):
		}
	}
}
