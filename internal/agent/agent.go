package agent

import (
	"context"
	"errors"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/copyhealth"
	"github.com/fedwarden/fedwarden/internal/hostcache"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/internal/scheme"
	"github.com/fedwarden/fedwarden/internal/typeconfig"
)

// Options configure an agent.
type Options struct {
	// Cluster is the name of the agent's FederatedCluster on the host.
	Cluster string
	// Namespace is the host's control-plane namespace, where the agent's
	// Lease lives.
	Namespace string
	// Holder identifies this agent process in the Lease (its pod name).
	Holder string
	// LeaseDuration is how long the host waits for a renewal before it
	// marks the cluster not Ready, between registration.MinAgentLeaseDuration
	// and MaxAgentLeaseDuration; RenewInterval how often the agent renews.
	LeaseDuration, RenewInterval time.Duration
	// Metrics says how /metrics is served: its address ("0" disables it),
	// and HTTPS with the filter that checks callers.
	Metrics metricsserver.Options
	// ProbeAddr is the address of /healthz and /readyz; "0" disables them.
	ProbeAddr string
	// Propagation configures the sync of each type, as on the host.
	Propagation propagation.Options
	// Notify configures the drift notifications of this cluster's copies
	// (the agent's --notify-* flags, as the controller-manager's).
	Notify notify.Options
}

// Validate reports options that cannot work.
func (o Options) Validate() error {
	var errs []error
	if o.Cluster == "" {
		errs = append(errs, errors.New("--cluster-name is required: the name the cluster joined the federation with"))
	} else if err := registration.ValidateName(o.Cluster); err != nil {
		errs = append(errs, fmt.Errorf("--cluster-name: %w", err))
	}
	if o.Namespace == "" {
		errs = append(errs, errors.New("--namespace must not be empty"))
	}
	if o.RenewInterval <= 0 || o.LeaseDuration < 2*o.RenewInterval {
		errs = append(errs, fmt.Errorf("--lease-renew-interval must be positive and --lease-duration at least twice as long, got %s and %s", o.RenewInterval, o.LeaseDuration))
	}
	if o.LeaseDuration < registration.MinAgentLeaseDuration || o.LeaseDuration > registration.MaxAgentLeaseDuration {
		errs = append(errs, fmt.Errorf("--lease-duration must be between %s and %s, got %s: the host's admission policy %s refuses any other Lease duration",
			registration.MinAgentLeaseDuration, registration.MaxAgentLeaseDuration, o.LeaseDuration, registration.AgentIsolationPolicyName))
	}
	if o.Propagation.Workers < 1 || o.Propagation.RetryPeriod <= 0 || o.Propagation.MemberListTimeout <= 0 || o.Propagation.ResyncPeriod < 0 {
		errs = append(errs, errors.New("--workers must be at least 1, --retry-period and --member-list-timeout positive, --resync-period not negative"))
	}
	if r := o.Propagation.DefaultRemediation; r != typesv1beta1.RemediationEnforce && r != typesv1beta1.RemediationAlert {
		errs = append(errs, fmt.Errorf("--default-remediation must be Enforce or Alert, not %q", r))
	}
	if o.Propagation.MaxWaiver < 0 {
		errs = append(errs, errors.New("--max-waiver-duration must not be negative (0 is the default, 30 days)"))
	}
	return errors.Join(errs...)
}

// Run runs the agent until ctx ends: host is how it reaches the host (as
// the agent's ServiceAccount there), member how it reaches its own cluster.
func Run(ctx context.Context, host, member *rest.Config, o Options) error {
	base, err := newManager(host, o)
	if err != nil {
		return err
	}
	events, err := newControlPlaneEvents(host, base.GetScheme(), o)
	if err != nil {
		return err
	}
	stopEvents, err := events.start(ctx)
	if err != nil {
		return err
	}
	defer stopEvents()
	var mgr manager.Manager = eventsManager{Manager: base, events: events}
	own, err := clustercache.NewMember(ctx, o.Cluster, member)
	if err != nil {
		return fmt.Errorf("building the clients of cluster %s: %w", o.Cluster, err)
	}
	renewer := &leaseRenewer{
		client: mgr.GetClient(), key: client.ObjectKey{Namespace: o.Namespace, Name: registration.AgentLeaseName(o.Cluster)},
		holder: o.Holder, duration: o.LeaseDuration, interval: o.RenewInterval, now: time.Now,
	}
	if v, err := own.Kube.Discovery().ServerVersion(); err == nil {
		renewer.version = v.GitVersion
	} else {
		ctrl.Log.Error(err, "Reading the cluster's Kubernetes version; it is not published", "cluster", o.Cluster)
	}
	if ns, err := own.Kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err == nil {
		renewer.clusterID = string(ns.UID)
	} else {
		ctrl.Log.Error(err, "Reading the cluster's kube-system namespace; its cluster ID is not published, so the host cannot tell a second FederatedCluster of this cluster", "cluster", o.Cluster)
	}
	if err := mgr.Add(renewer); err != nil {
		return fmt.Errorf("adding the Lease renewer: %w", err)
	}
	o.Propagation.Namespace = o.Namespace
	if o.Propagation.DriftNotifier, err = addNotifier(mgr, o.Notify); err != nil {
		return err
	}
	if o.Propagation.Health, err = copyhealth.New(); err != nil {
		return fmt.Errorf("compiling the built-in health rules: %w", err)
	}
	types := typeconfig.NewAgentReconciler(mgr, o.Propagation.Health, func(typ propagation.Type) (*propagation.Controller, error) {
		return propagation.NewAgent(mgr, typ, own, registration.AgentFieldManager(o.Cluster), o.Propagation)
	})
	if err := types.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the %s controller: %w", typeconfig.ControllerName, err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("adding the readiness check: %w", err)
	}
	ctrl.Log.Info("Starting the agent", "cluster", o.Cluster, "host", host.Host, "namespace", o.Namespace)
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the agent: %w", err)
	}
	return nil
}

// newManager returns the agent's manager on the host. Its cache holds only
// the CPVs placed on the agent's cluster, and the federated resources as
// the controller-manager's does (hostcache.Hold); its Lease is read from
// the API server, as the agent may read no other Lease.
func newManager(host *rest.Config, o Options) (manager.Manager, error) {
	placed, err := labels.NewRequirement(typesv1beta1.LabelPlacedPrefix+o.Cluster, selection.Exists, nil)
	if err != nil {
		return nil, fmt.Errorf("selecting the CPVs of cluster %s: %w", o.Cluster, err)
	}
	mgr, err := ctrl.NewManager(host, ctrl.Options{
		Scheme:                  scheme.New(),
		Metrics:                 o.Metrics,
		HealthProbeBindAddress:  o.ProbeAddr,
		GracefulShutdownTimeout: ptr.To(hostcache.ShutdownTimeout),
		Client: client.Options{Cache: &client.CacheOptions{
			Unstructured: true,
			DisableFor:   []client.Object{&coordinationv1.Lease{}},
		}},
		Cache: cache.Options{
			DefaultTransform: hostcache.Hold,
			ByObject: map[client.Object]cache.ByObject{
				&typesv1beta1.ClusterPropagatedVersion{}: {Label: labels.NewSelector().Add(*placed)},
			},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the agent's manager: %w", err)
	}
	return mgr, nil
}

// addNotifier runs the drift notifier of this cluster's copies when o
// names a sink; nil when it names none. The host sends no notification of
// a Pull cluster's copies: it learns of their drift only from the entries
// the agent writes.
func addNotifier(mgr manager.Manager, o notify.Options) (propagation.DriftNotifier, error) {
	n, err := notify.New(o, ctrl.Log.WithName("notify"))
	if err != nil || n == nil {
		return nil, err
	}
	if err := mgr.Add(n); err != nil {
		return nil, fmt.Errorf("adding the drift notifier: %w", err)
	}
	return n, nil
}
