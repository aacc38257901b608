package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

var deploymentsEnabled sync.Once

// enableDeployments creates the FederatedTypeConfig of Deployments, in
// KubeFed's shape, once, and waits until its controller runs.
func enableDeployments(t *testing.T) {
	t.Helper()
	joinedMembers(t)
	host := hostClient(t)
	deploymentsEnabled.Do(func() {
		ftc := decode(t, `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata:
  name: deployments.apps
spec:
  federatedType:
    group: types.kubefed.io
    kind: FederatedDeployment
    pluralName: federateddeployments
    scope: Namespaced
    version: v1beta1
  propagation: Enabled
  statusCollection: Enabled
  targetType:
    group: apps
    kind: Deployment
    pluralName: deployments
    scope: Namespaced
    version: v1
`)
		if err := host.Create(t.Context(), ftc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the FederatedTypeConfig: %v", err)
		}
	})
	eventually(t, 30*time.Second, "deployments.apps to be Running", func(ctx context.Context) (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := host.Get(ctx, types.NamespacedName{Name: "deployments.apps"}, ftc); err != nil {
			return false, err.Error()
		}
		return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
	})
}

// cpvOf returns the ClusterPropagatedVersion of a federated resource.
func cpvOf(ctx context.Context, c client.Client, namespace, name string) (*typesv1beta1.ClusterPropagatedVersion, error) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	return cpv, c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cpv)
}

// waitForCPV waits until the CPV has the versions and every listed cluster
// is InSync with them.
func waitForCPV(t *testing.T, c client.Client, namespace, name, templateVersion, overrideVersion string, clusters ...string) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	eventually(t, 30*time.Second, fmt.Sprintf("CPV %s/%s at %s/%s in sync on %v", namespace, name, templateVersion, overrideVersion, clusters), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = cpvOf(ctx, c, namespace, name); err != nil {
			return false, err.Error()
		}
		st := cpv.Status
		if string(st.TemplateVersion) != templateVersion || string(st.OverrideVersion) != overrideVersion || len(st.ClusterVersions) != len(clusters) {
			return false, fmt.Sprintf("%+v", st)
		}
		for i, cv := range st.ClusterVersions {
			if string(cv.ClusterName) != clusters[i] || cv.State != typesv1beta1.InSync || string(cv.TemplateVersion) != templateVersion || string(cv.OverrideVersion) != overrideVersion {
				return false, fmt.Sprintf("%+v", st)
			}
		}
		return meta.IsStatusConditionTrue(st.Conditions, typesv1beta1.CPVPropagated), fmt.Sprintf("%+v", st)
	})
	return cpv
}

// memberDeployment reads a Deployment from a member of the shared test bed.
func memberDeployment(t *testing.T, member int, namespace, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := newClient(t, fed.Members[member].Config).Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("reading Deployment %s/%s in %s: %v", namespace, name, fed.Members[member].Name, err)
	}
	return d
}

func TestTemplateAndOverrideVersions(t *testing.T) {
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	fd := decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: web, namespace: %s}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      replicas: 2
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.27"}]}
  placement: {clusters: [{name: %s}, {name: %s}]}
  overrides:
  - clusterName: %s
    clusterOverrides: [{path: /spec/replicas, value: 5}]
`, ns, m1, m2, m2))
	if err := host.Create(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	cpv := waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	if r := *memberDeployment(t, 0, ns, "web").Spec.Replicas; r != 2 {
		t.Errorf("%s: replicas = %d, want 2", m1, r)
	}
	d2 := memberDeployment(t, 1, ns, "web")
	if *d2.Spec.Replicas != 5 || d2.Labels[typesv1beta1.LabelManaged] != "true" {
		t.Errorf("%s: replicas = %d, labels %v; want 5 and managed", m2, *d2.Spec.Replicas, d2.Labels)
	}
	rv1 := cpv.Status.ClusterVersions[0].Version

	// A template change reaches both members; the override version stays.
	if err := host.Get(t.Context(), client.ObjectKeyFromObject(fd), fd); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructuredSlice(fd.Object, "spec", "template", "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["image"] = "nginx:1.28"
	setNested(t, fd.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
	if err := host.Update(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	cpv = waitForCPV(t, host, ns, "deployment-web", "2", "1", m1, m2)
	for i := range fed.Members {
		if img := memberDeployment(t, i, ns, "web").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
			t.Errorf("%s: image = %s after the template change", fed.Members[i].Name, img)
		}
	}
	rv1 = cpv.Status.ClusterVersions[0].Version

	// An override change rewrites only its cluster.
	if err := host.Get(t.Context(), client.ObjectKeyFromObject(fd), fd); err != nil {
		t.Fatal(err)
	}
	setNested(t, fd.Object, []any{map[string]any{"clusterName": m2, "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(7)}}}}, "spec", "overrides")
	if err := host.Update(t.Context(), fd); err != nil {
		t.Fatal(err)
	}
	cpv = waitForCPV(t, host, ns, "deployment-web", "2", "2", m1, m2)
	if got := cpv.Status.ClusterVersions[0].Version; got != rv1 {
		t.Errorf("%s was written (resourceVersion %s → %s) by an override change of %s", m1, rv1, got, m2)
	}
	if r := *memberDeployment(t, 1, ns, "web").Spec.Replicas; r != 7 {
		t.Errorf("%s: replicas = %d, want 7", m2, r)
	}
}
