package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/poll"
)

// deploymentsEnabled creates the FederatedTypeConfig of Deployments, in
// KubeFed's shape, in the shared test bed, once for all tests, and returns
// why it could not. Every test that calls enableDeployments fails on that
// error, not only the first.
var deploymentsEnabled = sync.OnceValue(func() error {
	ftc := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(deploymentsTypeConfig), &ftc.Object); err != nil {
		return fmt.Errorf("decoding the FederatedTypeConfig: %w", err)
	}
	host, err := buildClient(fed.Host.Config)
	if err != nil {
		return err
	}
	// Not a test's context: the FederatedTypeConfig serves every test.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := host.Create(ctx, ftc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the FederatedTypeConfig: %w", err)
	}
	return nil
})

// enableDeployments enables Deployments in the shared test bed (once for
// all tests) and waits until their propagation controller runs.
func enableDeployments(t *testing.T) {
	t.Helper()
	joinedMembers(t)
	if err := deploymentsEnabled(); err != nil {
		t.Fatalf("enabling Deployments in the shared test bed: %v", err)
	}
	host := hostClient(t)
	poll.Eventually(t, time.Minute, "deployments.apps to be Running", func(ctx context.Context) (bool, string) {
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
	poll.Eventually(t, settleWithin, fmt.Sprintf("CPV %s/%s at %s/%s in sync on %v", namespace, name, templateVersion, overrideVersion, clusters), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = cpvOf(ctx, c, namespace, name); err != nil {
			return false, err.Error()
		}
		st := cpv.Status
		if string(st.TemplateVersion) != templateVersion || string(st.OverrideVersion) != overrideVersion || len(st.ClusterVersions) != len(clusters) {
			return false, fmt.Sprintf("%+v", st)
		}
		// Entries are in the order their writers applied them: the host's,
		// then each Pull cluster's agent's.
		entries := slices.Clone(st.ClusterVersions)
		slices.SortFunc(entries, func(a, b typesv1beta1.ClusterVersion) int {
			return strings.Compare(string(a.ClusterName), string(b.ClusterName))
		})
		for i, cv := range entries {
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
	skipInShortMode(t)
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
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	if r := *memberDeployment(t, 0, ns, "web").Spec.Replicas; r != 2 {
		t.Errorf("%s: replicas = %d, want 2", m1, r)
	}
	d2 := memberDeployment(t, 1, ns, "web")
	if *d2.Spec.Replicas != 5 || d2.Labels[typesv1beta1.LabelManaged] != "true" {
		t.Errorf("%s: replicas = %d, labels %v; want 5 and managed", m2, *d2.Spec.Replicas, d2.Labels)
	}

	// A template change reaches both members; the override version stays.
	updateObject(t, host, fd, func() {
		containers, _, _ := unstructuredSlice(fd.Object, "spec", "template", "spec", "template", "spec", "containers")
		containers[0].(map[string]any)["image"] = "nginx:1.28"
		setNested(t, fd.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
	})
	waitForCPV(t, host, ns, "deployment-web", "2", "1", m1, m2)
	for i := range fed.Members {
		if img := memberDeployment(t, i, ns, "web").Spec.Template.Spec.Containers[0].Image; img != "nginx:1.28" {
			t.Errorf("%s: image = %s after the template change", fed.Members[i].Name, img)
		}
	}
	before := fedwardenWrite(memberDeployment(t, 0, ns, "web"))

	// An override change rewrites only its cluster.
	updateObject(t, host, fd, func() {
		setNested(t, fd.Object, []any{map[string]any{"clusterName": m2, "clusterOverrides": []any{map[string]any{"path": "/spec/replicas", "value": int64(7)}}}}, "spec", "overrides")
	})
	waitForCPV(t, host, ns, "deployment-web", "2", "2", m1, m2)
	if after := fedwardenWrite(memberDeployment(t, 0, ns, "web")); after != before {
		t.Errorf("%s was written by an override change of %s: %s → %s", m1, m2, before, after)
	}
	if r := *memberDeployment(t, 1, ns, "web").Spec.Replicas; r != 7 {
		t.Errorf("%s: replicas = %d, want 7", m2, r)
	}
}

// fedwardenWrite describes Fedwarden's last write of a member object: the
// object's generation and the time of the "fedwarden" field manager's
// entry. The member's own controllers update its status (and so its
// resourceVersion) on their own; this moves only when Fedwarden writes.
func fedwardenWrite(obj client.Object) string {
	for _, mf := range obj.GetManagedFields() {
		if mf.Manager == propagation.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return fmt.Sprintf("generation %d, applied at %s", obj.GetGeneration(), mf.Time)
		}
	}
	return fmt.Sprintf("generation %d, never applied", obj.GetGeneration())
}

// updateObject reads obj again, changes it with mutate and updates it, as
// often as the controllers' status writes make the update conflict.
func updateObject(t *testing.T, c client.Client, obj client.Object, mutate func()) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return c.Update(t.Context(), obj)
	})
	if err != nil {
		t.Fatalf("updating %s: %v", client.ObjectKeyFromObject(obj), err)
	}
}
