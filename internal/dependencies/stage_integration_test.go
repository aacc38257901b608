package dependencies_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/enable"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/dependencies"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// TestTheStageWritesADerivedResourceOnce runs the dependencies stage on a
// real host, where no controller-manager runs: a workload mounting a
// ConfigMap gets its derived FederatedConfigMap, created with the sync
// finalizer (no write of the controller's is needed for it); once the
// derived resource has a status, as its controller would write, a second
// sync of the workload writes it no more: the host counts no PATCH of
// federatedconfigmaps. Before 67d1329 every sync patched it, its status
// compared with a derived resource that has none.
func TestTheStageWritesADerivedResourceOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kube-apiserver")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	host := clitest.Client(t, fed.Host.Kubeconfig)
	if _, stderr, code := clitest.Execute(enable.NewCommand, "configmaps", "--host-kubeconfig", fed.Host.Kubeconfig); code != 0 {
		t.Fatalf("fedwarden enable configmaps: exit code %d: %s", code, stderr)
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-config"}, Data: map[string]string{"mode": "blue"}},
	} {
		if err := host.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	stage := dependencies.NewStage(host, host, nil)
	w := dependencies.Workload{
		Federated: schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"},
		Target:    schema.GroupKind{Group: "apps", Kind: "Deployment"},
		Object:    workload(),
		Clusters:  []string{"cluster-a"},
	}
	sync := func() {
		t.Helper()
		st, err := stage.Sync(ctx, w)
		if err != nil || len(st) != 1 || st[0].State != typesv1beta1.DependencyPropagated {
			t.Fatalf("Sync: %+v, %v; want web-config Propagated", st, err)
		}
	}

	sync()
	derived := &unstructured.Unstructured{}
	derived.SetAPIVersion("types.kubefed.io/v1beta1")
	derived.SetKind("FederatedConfigMap")
	key := types.NamespacedName{Namespace: "shop", Name: "web-config"}
	if err := host.Get(ctx, key, derived); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(derived.GetFinalizers(), typesv1beta1.FinalizerSync) {
		t.Errorf("the derived FederatedConfigMap's finalizers: %v; want %s from its creation", derived.GetFinalizers(), typesv1beta1.FinalizerSync)
	}
	// Its controller's status, which the stage does not write.
	before := derived.DeepCopy()
	if err := unstructured.SetNestedField(derived.Object, derived.GetGeneration(), "status", "observedGeneration"); err != nil {
		t.Fatal(err)
	}
	if err := host.Status().Patch(ctx, derived, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	kube := fedtest.MustKube(t, fed.Host.Config)
	counted, err := fedtest.HostWriteCounts(ctx, kube, "types.kubefed.io")
	if err != nil {
		t.Fatal(err)
	}
	sync()
	after, err := fedtest.HostWriteCounts(ctx, kube, "types.kubefed.io")
	if err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"PATCH", "APPLY", "PUT", "POST"} {
		if n := after[verb+" federatedconfigmaps"] - counted[verb+" federatedconfigmaps"]; n != 0 {
			t.Errorf("a second sync with nothing changed wrote the derived resource: %v %s; want none", n, verb)
		}
	}
}

// workload is a FederatedDeployment web in shop that mounts ConfigMap
// web-config.
func workload() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": "web", "namespace": "shop", "uid": "4b1c7e0e-2f6d-4d7a-9a51-0c2d1f3e5a77"},
		"spec": map[string]any{
			"propagateDependencies": true,
			"template": map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "nginx"}},
				"volumes":    []any{map[string]any{"name": "config", "configMap": map[string]any{"name": "web-config"}}},
			}}}},
		},
	}}
}
