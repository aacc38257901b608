package propagation

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/fedwarden/fedwarden/internal/scheme"
)

// A panic in a sync becomes an error of that sync, counted in
// controller_runtime_reconcile_panics_total, and the controller goes on:
// RecoverPanic is set on every propagation controller. The panic here is a
// reconciler built without its client (a nil dereference), through the
// same wiring as the controller-manager's; nothing is contacted.
func TestReconcilesRecoverPanics(t *testing.T) {
	t.Parallel()
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{typ: configMaps, place: &placer{typ: configMaps}, apply: &applier{typ: configMaps}} // no client: Reconcile panics
	c, err := newController(mgr, r, "propagation-panics-test")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		_, err := c.ctrl.Reconcile(t.Context(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "web"}})
		if err == nil || !strings.Contains(err.Error(), "panic: runtime error: invalid memory address or nil pointer dereference [recovered]") {
			t.Fatalf("reconcile %d: error %v, want the recovered panic", i+1, err)
		}
	}
	if got := panicsOf(t, "propagation-panics-test"); got != 2 {
		t.Errorf("controller_runtime_reconcile_panics_total = %v, want 2", got)
	}
}

// panicsOf reads controller_runtime_reconcile_panics_total of a controller
// from controller-runtime's registry.
func panicsOf(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_panics_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
