package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
)

// The sync finalizer is added when a federated resource of an enabled kind
// is created (the fedwarden-sync-finalizer MutatingAdmissionPolicy), so the
// controller does not write the resource once just for it: the create's
// answer already holds it, and after the resource is propagated no field of
// its main resource is Fedwarden's (only its status is). A federated kind
// that no FederatedTypeConfig enables gets none, so it stays deletable
// without a controller.
func TestTheSyncFinalizerIsAddedAtCreation(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1 := fed.Members[0].Name
	// The API server loads the policy and its params (the
	// FederatedTypeConfigs) from watches: a dry run shows when it applies.
	eventually(t, 30*time.Second, "a dry-run create to get the finalizer", func(ctx context.Context) (bool, string) {
		obj := newFederatedDeployment(t, ns, "probe", 1, placedOn(m1))
		if err := host.Create(ctx, obj, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		return hasSyncFinalizer(obj), fmt.Sprint(obj.GetFinalizers())
	})

	obj := newFederatedDeployment(t, ns, "web", 1, placedOn(m1))
	createObject(t, host, obj)
	if !hasSyncFinalizer(obj) {
		t.Fatalf("the create's answer has finalizers %v, want %s", obj.GetFinalizers(), typesv1beta1.FinalizerSync)
	}
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1)
	if err := host.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == propagation.FieldManager && mf.Subresource == "" {
			t.Errorf("Fedwarden wrote the main resource (%s at %s), want only its status", mf.Operation, mf.Time)
		}
	}

	// A federated kind no FederatedTypeConfig enables: its CRD alone.
	crd := decode(t, `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: federatedunenableds.types.kubefed.io}
spec:
  group: types.kubefed.io
  names: {kind: FederatedUnenabled, plural: federatedunenableds, singular: federatedunenabled, listKind: FederatedUnenabledList}
  scope: Namespaced
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`)
	createObject(t, host, crd)
	t.Cleanup(func() { _ = host.Delete(context.Background(), crd) })
	eventually(t, 30*time.Second, "a FederatedUnenabled to be created, without the finalizer", func(ctx context.Context) (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("types.kubefed.io/v1beta1")
		u.SetKind("FederatedUnenabled")
		u.SetNamespace(ns)
		u.SetName("plain")
		if err := host.Create(ctx, u, client.DryRunAll); err != nil {
			return false, err.Error()
		}
		if hasSyncFinalizer(u) {
			t.Fatalf("a kind no FederatedTypeConfig enables got the finalizer: %v", u.GetFinalizers())
		}
		return true, ""
	})
}

func hasSyncFinalizer(obj client.Object) bool {
	return slices.Contains(obj.GetFinalizers(), typesv1beta1.FinalizerSync)
}
