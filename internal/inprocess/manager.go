package inprocess

import (
	"context"
	"errors"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	schedulingv1alpha1 "github.com/fedwarden/fedwarden/api/scheduling/v1alpha1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/clusterhealth"
	"github.com/fedwarden/fedwarden/internal/egress"
)

// Controllers adds the controllers under test to mgr. members is the cache
// of member clients the cluster health controller keeps, which they share.
type Controllers func(mgr ctrl.Manager, members *clustercache.Cache) error

// controllerManagerTypes are the types `fedwarden controller-manager`
// registers in its scheme.
var controllerManagerTypes = []func(*runtime.Scheme) error{
	clientgoscheme.AddToScheme, corev1beta1.AddToScheme, typesv1beta1.AddToScheme, schedulingv1alpha1.AddToScheme,
}

// StartManager runs, in a manager set up as `fedwarden controller-manager`
// sets up its own, the cluster health controller and the controllers add
// adds. The health controller probes every member every 2 s, with a 5 s
// timeout, and marks one not Ready after 3 failed probes in a row, Ready
// after one that passed. Stop stops the manager.
func (b *Bed) StartManager(add Controllers) error {
	if b.stopManager != nil {
		return errors.New("the manager was started already")
	}
	mgr, err := b.newManager()
	if err != nil {
		return err
	}
	members := clustercache.New(clustercache.Options{
		QPS: 300, Burst: 600, UserAgent: b.name + "-integration-test",
		Networks: egress.Loopback, Log: ctrl.Log.WithName("egress"),
	})
	health := clusterhealth.Options{
		Namespace:  ControlPlaneNamespace,
		Period:     2 * time.Second,
		Timeout:    5 * time.Second,
		Thresholds: clusterhealth.Thresholds{Failure: 3, Success: 1},
		Workers:    max(len(b.Fed.Members), 1),
	}
	if err := clusterhealth.NewReconciler(mgr.GetClient(), members, mgr.GetEventRecorder(clusterhealth.ControllerName), health).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := add(mgr, members); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.stopManager, b.managerDone = cancel, make(chan error, 1)
	go func() { b.managerDone <- mgr.Start(ctx) }()
	return nil
}

// newManager returns a manager of the host with the scheme, client and
// cache options of `fedwarden controller-manager`, and its default rate
// limits.
func (b *Bed) newManager() (ctrl.Manager, error) {
	scheme, err := newScheme(controllerManagerTypes...)
	if err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(b.Fed.Host.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject: map[client.Object]cache.ByObject{
				&corev1.Secret{}:        {Namespaces: map[string]cache.Config{ControlPlaneNamespace: {}}},
				&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{ControlPlaneNamespace: {}}},
			},
		},
	})
}

func newScheme(adds ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range adds {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}
