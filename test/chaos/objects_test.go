package chaos

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// federatedConfigMap is a FederatedConfigMap placed on clusters, with one
// data key per cluster overridden.
func federatedConfigMap(namespace, name string, clusters []string, labels map[string]string) *unstructured.Unstructured {
	placement, overrides := []any{}, []any{}
	for _, c := range clusters {
		placement = append(placement, map[string]any{"name": c})
		overrides = append(overrides, map[string]any{"clusterName": c, "clusterOverrides": []any{
			map[string]any{"path": "/data/cluster", "value": c},
		}})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"template":  map[string]any{"data": map[string]any{"greeting": "hello", "cluster": "unset"}},
			"placement": map[string]any{"clusters": placement},
			"overrides": overrides,
		},
	}}
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	return u
}

// createAll creates objs with workers in parallel, and returns the first
// error.
func createAll(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, workers int) error {
	todo := make(chan *unstructured.Unstructured)
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range workers {
		wg.Go(func() {
			for obj := range todo {
				if err := c.Create(ctx, obj); err != nil {
					once.Do(func() { first = fmt.Errorf("creating %s: %w", obj.GetName(), err) })
				}
			}
		})
	}
	for _, obj := range objs {
		todo <- obj
	}
	close(todo)
	wg.Wait()
	return first
}

// listFederated returns the FederatedConfigMaps of namespace.
func listFederated(ctx context.Context, c client.Client, namespace string) ([]unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("types.kubefed.io/v1beta1")
	list.SetKind("FederatedConfigMapList")
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// denyFinalizerLabel marks the FederatedConfigMaps whose sync finalizer
// the host refuses (denyFinalizers): their finalizer never lands.
const denyFinalizerLabel = "chaos.fedwarden.io/deny-finalizer"

// denyFinalizers installs on the host a ValidatingAdmissionPolicy that
// refuses the sync finalizer on FederatedConfigMaps labelled
// denyFinalizerLabel, and waits until it is enforced: it holds open, as
// long as the test wants, the window between a resource's first sync and
// its finalizer landing, which a crash otherwise opens for milliseconds.
func denyFinalizers(t *testing.T, host client.Client, namespace string) {
	t.Helper()
	name := "chaos-deny-finalizer-" + namespace
	policy, binding := fedtest.RefusingPolicy(name, namespace, admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"types.kubefed.io"}, APIVersions: []string{"*"}, Resources: []string{"federatedconfigmaps"}},
	}, fmt.Sprintf("!has(object.metadata.labels) || !('%s' in object.metadata.labels) || !has(object.metadata.finalizers) || !('%s' in object.metadata.finalizers)", denyFinalizerLabel, typesv1beta1.FinalizerSync),
		"chaos: the sync finalizer is refused here")
	for _, obj := range []client.Object{policy, binding} {
		if err := host.Create(t.Context(), obj); err != nil {
			t.Fatalf("creating the chaos admission policy: %v", err)
		}
	}
	probe := federatedConfigMap(namespace, "chaos-probe", nil, map[string]string{denyFinalizerLabel: "true"})
	probe.SetFinalizers([]string{typesv1beta1.FinalizerSync})
	poll.Eventually(t, time.Minute, "the chaos admission policy to be enforced", func(ctx context.Context) (bool, string) {
		err := host.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return true, ""
		}
		return false, fmt.Sprintf("a probe with the finalizer: %v", err)
	})
}
