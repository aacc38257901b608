package driftaction_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/driftaction"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/memberdiff"
)

const federatedDeployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: shop}
spec:
  placement: {clusters: [{name: cluster-a}]}
  template:
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

// TestWaiveAfterAReport adds a waiver to a FederatedDeployment of a real
// host that the controller reported on since the command read it: the
// report changed its status, not its spec, so the waiver is written and the
// report kept. A waiver read before someone else changed the spec is
// refused, and the other writer's change kept.
func TestWaiveAfterAReport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0))
	host := clitest.Client(t, fed.Host.Kubeconfig)
	if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(federatedDeployment), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if err := host.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	read := func() *unstructured.Unstructured {
		t.Helper()
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := host.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	waiver := func(reason string) typesv1beta1.DriftWaiver {
		return driftaction.Waiver{Clusters: []string{"cluster-a"}, Paths: []string{"/spec/replicas"}, For: time.Hour, Reason: reason}.Of(time.Now())
	}

	stale := read()
	reported := stale.DeepCopy()
	if err := unstructured.SetNestedField(reported.Object, int64(1), "status", "clusterCount"); err != nil {
		t.Fatal(err)
	}
	if err := host.Status().Update(ctx, reported); err != nil {
		t.Fatalf("the controller's report: %v", err)
	}
	if read().GetResourceVersion() == stale.GetResourceVersion() {
		t.Fatal("the report did not change the resource: the test would prove nothing")
	}
	if err := driftaction.Waive(ctx, host, &memberdiff.Resource{Fed: stale}, waiver("maintenance"), false); err != nil {
		t.Fatalf("waiving after a status report: %v; want it written", err)
	}
	now := read()
	waivers, _, _ := unstructured.NestedSlice(now.Object, "spec", "driftPolicy", "waivers")
	count, _, _ := unstructured.NestedInt64(now.Object, "status", "clusterCount")
	if len(waivers) != 1 || waivers[0].(map[string]any)["reason"] != "maintenance" || count != 1 {
		t.Errorf("after the waiver: waivers %v, status.clusterCount %d; want the one waiver and the report kept", waivers, count)
	}

	stale = now
	edited := stale.DeepCopy()
	if err := unstructured.SetNestedField(edited.Object, int64(3), "spec", "template", "spec", "replicas"); err != nil {
		t.Fatal(err)
	}
	if err := host.Update(ctx, edited); err != nil {
		t.Fatalf("another writer's spec change: %v", err)
	}
	err := driftaction.Waive(ctx, host, &memberdiff.Resource{Fed: stale}, waiver("second"), false)
	if err == nil || !strings.Contains(err.Error(), "changed since it was read (resourceVersion ") {
		t.Fatalf("waiving on a spec read before another writer's change: %v; want it refused", err)
	}
	now = read()
	waivers, _, _ = unstructured.NestedSlice(now.Object, "spec", "driftPolicy", "waivers")
	replicas, _, _ := unstructured.NestedInt64(now.Object, "spec", "template", "spec", "replicas")
	if len(waivers) != 1 || replicas != 3 {
		t.Errorf("after the refusal: waivers %v, replicas %d; want the first waiver alone and the other writer's 3 replicas", waivers, replicas)
	}
}
