package inprocess

import (
	"context"
	"errors"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/fedwarden/fedwarden/internal/clustercache"
	"github.com/fedwarden/fedwarden/internal/clusterhealth"
	"github.com/fedwarden/fedwarden/internal/egress"
	"github.com/fedwarden/fedwarden/internal/hostcache"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// Controllers adds the controllers under test to mgr. members is the cache
// of member clients the cluster health controller keeps, which they share.
type Controllers func(mgr ctrl.Manager, members *clustercache.Cache) error

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
		Identity:   b.name + "-integration-test",
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
	cfg := rest.CopyConfig(b.Fed.Host.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	return ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme.New(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Client:                 client.Options{Cache: &client.CacheOptions{Unstructured: true}},
		Cache:                  hostcache.Options(ControlPlaneNamespace),
	})
}
