package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/planreport"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// typesEnabled enables a type in the shared test bed once per run.
var typesEnabled sync.Map // resource → func() error

// enableTypes enables the types named (as fedwarden enable takes them)
// in the shared test bed, and waits for their controllers to run.
func enableTypes(t *testing.T, resources ...string) {
	t.Helper()
	joinedMembers(t)
	host := hostClient(t)
	for _, resource := range resources {
		once, _ := typesEnabled.LoadOrStore(resource, sync.OnceValue(func() error {
			// Not a test's context: the type serves every test.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			r, err := fedtest.Run(ctx, fedwardenBin, "enable", resource, "--host-kubeconfig", fed.Host.Kubeconfig)
			if err != nil {
				return err
			}
			if r.Code != 0 {
				return fmt.Errorf("fedwarden enable %s:\n%s", resource, r)
			}
			return nil
		}))
		if err := once.(func() error)(); err != nil {
			t.Fatalf("enabling %s in the shared test bed: %v", resource, err)
		}
		poll.Eventually(t, time.Minute, resource+" to be Running", func(ctx context.Context) (bool, string) {
			ftc := &corev1beta1.FederatedTypeConfig{}
			if err := host.Get(ctx, types.NamespacedName{Name: resource}, ftc); err != nil {
				return false, err.Error()
			}
			return ftc.Status.PropagationController == corev1beta1.ControllerStatusRunning, fmt.Sprintf("%+v", ftc.Status)
		})
	}
}

// TestDependenciesTravelWithTheirWorkload: a FederatedDeployment with
// spec.propagateDependencies that mounts a ConfigMap, reads a Secret and
// runs as a ServiceAccount finds all three in both members, each with a
// CPV of its own, InSync; a change of the host ConfigMap reaches both, and
// a hand edit in a member is healed. A second workload that needs the
// ConfigMap keeps it in the cluster the first one leaves, while the
// Secret and ServiceAccount, which only the first needs, go from there;
// once no workload there needs the ConfigMap, it goes too. A dependency
// missing on the host is reported, and the workload is propagated all the
// same.
func TestDependenciesTravelWithTheirWorkload(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	enableTypes(t, "configmaps", "secrets", "serviceaccounts")
	host := hostClient(t)
	ns := testNamespace(t, host)
	a, b := fed.Members[0].Name, fed.Members[1].Name
	members := map[string]client.Client{a: memberClient(t, 0), b: memberClient(t, 1)}
	secretValue := randomValue(t)

	createObject(t, host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"mode": "blue"}})
	createObject(t, host, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}, StringData: map[string]string{"password": secretValue}})
	createObject(t, host, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-sa"}})
	firstWrites := watchFirstWrites(t, fed.Members[0].Config, ns)
	createObject(t, host, dependentDeployment(t, ns, "web", "web-config", "web-sa", "web-secret", a, b))

	for _, cluster := range []string{a, b} {
		waitForMemberConfigMap(t, members[cluster], cluster, ns, "web-config", "blue")
		waitForMemberObject(t, members[cluster], cluster, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}}, func(o client.Object) bool {
			return string(o.(*corev1.Secret).Data["password"]) == secretValue
		})
		waitForMemberObject(t, members[cluster], cluster, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-sa"}}, nil)
	}
	for _, cpv := range []string{"configmap-web-config", "secret-web-secret", "serviceaccount-web-sa"} {
		for _, cluster := range []string{a, b} {
			waitForEntry(t, host, ns, cpv, cluster, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
		}
	}
	waitForDependencies(t, host, ns, "web", metav1.ConditionTrue, map[string]typesv1beta1.DependencyState{
		"ConfigMap/web-config": typesv1beta1.DependencyPropagated, "Secret/web-secret": typesv1beta1.DependencyPropagated, "ServiceAccount/web-sa": typesv1beta1.DependencyPropagated,
	})
	checkNoTokenIn(t, "the FederatedDeployment's status", statusText(t, host, "FederatedDeployment", ns, "web"), secretValue)
	waitForMemberObject(t, members[a], a, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, nil)
	firstWrites.checkBefore(t, "Deployment/web", "ConfigMap/web-config", "Secret/web-secret", "ServiceAccount/web-sa")

	t.Run("the console shows the dependencies' copies under the workload", func(t *testing.T) {
		console := startConsole(t, "--host-kubeconfig", fed.Host.Kubeconfig)
		page := fedtest.StartBrowser(t).NewPage(t)
		q := url.Values{"kind": {"FederatedDeployment.types.kubefed.io"}, "namespace": {ns}, "name": {"web"}}
		openPage(t, page, console.URL+"/resource?"+q.Encode(), true)
		for _, dep := range []string{"FederatedConfigMap/" + ns + "/web-config", "FederatedSecret/" + ns + "/web-secret", "FederatedServiceAccount/" + ns + "/web-sa"} {
			for _, cluster := range []string{a, b} {
				cell := fmt.Sprintf(`document.querySelector('[data-testid="dependencies"] tr[data-testid=%s] td[data-cluster=%s]')`, jsString("dependency-"+dep), jsString(cluster))
				if _, err := page.WaitFor(liveTimeout, `(`+cell+` || {}).textContent === "InSync"`); err != nil {
					t.Errorf("the page shows %s in %s as %q, want InSync: %v", dep, cluster, pageText(t, page, `[data-testid="dependencies"]`), err)
				}
			}
		}
		noConsoleErrors(t, page, "the resource page")
	})

	t.Run("a change of the host ConfigMap reaches both members, and a hand edit is healed", func(t *testing.T) {
		patchHost(t, host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, `{"data":{"mode":"green"}}`)
		for _, cluster := range []string{a, b} {
			waitForMemberConfigMap(t, members[cluster], cluster, ns, "web-config", "green")
		}
		patchHost(t, members[a], &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, `{"data":{"mode":"by-hand"}}`)
		waitForMemberConfigMap(t, members[a], a, ns, "web-config", "green")
	})

	t.Run("a second workload keeps the ConfigMap where the first leaves", func(t *testing.T) {
		createObject(t, host, dependentDeployment(t, ns, "worker", "web-config", "", "", b))
		waitForDerivedOwners(t, host, ns, "web-config", "FederatedDeployment.types.kubefed.io/web", "FederatedDeployment.types.kubefed.io/worker")
		// kubectl get cpv names the workloads a dependency goes with.
		poll.Eventually(t, settleWithin, "the ConfigMap's CPV to name both workloads", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, host, ns, "configmap-web-config")
			if err != nil {
				return false, err.Error()
			}
			return slices.Equal(cpv.Spec.DependencyOf, []string{"FederatedDeployment/web", "FederatedDeployment/worker"}), fmt.Sprint(cpv.Spec.DependencyOf)
		})
		if out := kubectl(t, fed.Host.Kubeconfig, "get", "cpv", "configmap-web-config", "-n", ns); !strings.Contains(out, "DEPENDENCY-OF") || !strings.Contains(out, "FederatedDeployment/worker") {
			t.Errorf("kubectl get cpv does not show the owners:\n%s", out)
		}
		// plan says what moving web to a alone does to its dependencies.
		checkPlannedDependencies(t, dependentDeployment(t, ns, "web", "web-config", "web-sa", "web-secret", a), map[string]string{
			"ConfigMap/web-config": "Propagated +[] -[]", "Secret/web-secret": "Propagated +[] -[" + b + "]", "ServiceAccount/web-sa": "Propagated +[] -[" + b + "]",
		})
		patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
			_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"name": a}}, "spec", "placement", "clusters")
		})
		waitForAbsent(t, members[b], &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}}, b, settleWithin)
		waitForAbsent(t, members[b], &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-sa"}}, b, settleWithin)
		// The Deployment of web left b; the ConfigMap worker needs stays.
		waitForAbsentDeployment(t, members[b], b, ns, "web")
		waitForMemberConfigMap(t, members[b], b, ns, "web-config", "green")
		waitForMemberConfigMap(t, members[a], a, ns, "web-config", "green")
	})

	t.Run("the ConfigMap goes from a cluster once no workload there needs it", func(t *testing.T) {
		if err := host.Delete(t.Context(), dependentDeployment(t, ns, "worker", "web-config", "", "", b)); err != nil {
			t.Fatal(err)
		}
		waitForAbsent(t, members[b], &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, b, settleWithin)
		waitForDerivedOwners(t, host, ns, "web-config", "FederatedDeployment.types.kubefed.io/web")
		waitForMemberConfigMap(t, members[a], a, ns, "web-config", "green")
	})

	t.Run("a dependency missing on the host is reported, and the workload goes without it", func(t *testing.T) {
		patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
			volumes := []any{
				map[string]any{"name": "config", "configMap": map[string]any{"name": "web-config"}},
				map[string]any{"name": "extra", "configMap": map[string]any{"name": "not-there"}},
			}
			_ = unstructured.SetNestedSlice(obj.Object, volumes, "spec", "template", "spec", "template", "spec", "volumes")
		})
		waitForDependencies(t, host, ns, "web", metav1.ConditionFalse, map[string]typesv1beta1.DependencyState{
			"ConfigMap/web-config": typesv1beta1.DependencyPropagated, "ConfigMap/not-there": typesv1beta1.DependencyMissing,
			"Secret/web-secret": typesv1beta1.DependencyPropagated, "ServiceAccount/web-sa": typesv1beta1.DependencyPropagated,
		})
		waitForEvent(t, host, ns, "web", typesv1beta1.ReasonDependencyMissing+": ", `ConfigMap "not-there"`, "does not exist")
		current := &unstructured.Unstructured{}
		current.SetGroupVersionKind(dependentDeployment(t, ns, "web", "", "", "").GroupVersionKind())
		if err := host.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web"}, current); err != nil {
			t.Fatal(err)
		}
		unstructured.RemoveNestedField(current.Object, "status")
		unstructured.RemoveNestedField(current.Object, "metadata", "managedFields")
		checkPlannedDependencies(t, current, map[string]string{
			"ConfigMap/web-config": "Propagated +[] -[]", "ConfigMap/not-there": "Missing +[] -[]",
			"Secret/web-secret": "Propagated +[] -[]", "ServiceAccount/web-sa": "Propagated +[] -[]",
		})
		poll.Eventually(t, settleWithin, "the Deployment with the new volume in "+a, func(ctx context.Context) (bool, string) {
			d, err := memberDeploymentOf(ctx, members[a], ns, "web")
			if err != nil {
				return false, err.Error()
			}
			return len(d.Spec.Template.Spec.Volumes) == 2, fmt.Sprintf("%d volumes", len(d.Spec.Template.Spec.Volumes))
		})
		// Created on the host, it goes at once (the watch of the host
		// objects syncs the workload that found it missing).
		createObject(t, host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-there"}, Data: map[string]string{"mode": "late"}})
		waitForMemberConfigMap(t, members[a], a, ns, "not-there", "late")
		waitForDependencies(t, host, ns, "web", metav1.ConditionTrue, map[string]typesv1beta1.DependencyState{
			"ConfigMap/web-config": typesv1beta1.DependencyPropagated, "ConfigMap/not-there": typesv1beta1.DependencyPropagated,
			"Secret/web-secret": typesv1beta1.DependencyPropagated, "ServiceAccount/web-sa": typesv1beta1.DependencyPropagated,
		})
	})

	t.Run("a dependency the template no longer names goes", func(t *testing.T) {
		patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
			containers := []any{map[string]any{"name": "web", "image": "nginx:1.27"}}
			_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
		})
		waitForAbsent(t, members[a], &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}}, a, settleWithin)
		derived := &unstructured.Unstructured{}
		derived.SetAPIVersion("types.kubefed.io/v1beta1")
		derived.SetKind("FederatedSecret")
		derived.SetNamespace(ns)
		derived.SetName("web-secret")
		waitForAbsent(t, host, derived, "the host", settleWithin)
		waitForMemberConfigMap(t, members[a], a, ns, "web-config", "green")
		if err := host.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web-secret"}, &corev1.Secret{}); err != nil {
			t.Errorf("the host Secret: %v; want it kept", err)
		}
	})

	t.Run("a user's own FederatedConfigMap wins", func(t *testing.T) {
		createObject(t, host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-config"}, Data: map[string]string{"mode": "own"}})
		own := decode(t, fmt.Sprintf(`apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: own-config, namespace: %s}
spec:
  placement: {clusters: [{name: %s}]}
  template: {data: {mode: "user's"}}`, ns, a))
		createObject(t, host, own)
		createObject(t, host, dependentDeployment(t, ns, "explicit", "own-config", "", "", a, b))
		waitForDependencies(t, host, ns, "explicit", metav1.ConditionTrue, map[string]typesv1beta1.DependencyState{"ConfigMap/own-config": typesv1beta1.DependencyExplicit})
		waitForMemberConfigMap(t, members[a], a, ns, "own-config", "user's")
		// Not waited for: the user's placement says where it goes.
		waitForMemberObject(t, members[b], b, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "explicit"}}, nil)
		if err := host.Get(t.Context(), client.ObjectKeyFromObject(own), own); err != nil {
			t.Fatal(err)
		}
		placed, _, _ := unstructured.NestedSlice(own.Object, "spec", "placement", "clusters")
		if len(placed) != 1 || own.GetLabels()[typesv1beta1.LabelDependency] != "" || own.GetAnnotations()[typesv1beta1.AnnotationDependencyOf] != "" {
			t.Errorf("the user's FederatedConfigMap: placement %v, labels %v, annotations %v; want it as the user wrote it", placed, own.GetLabels(), own.GetAnnotations())
		}
		if err := members[b].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "own-config"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap own-config in %s: %v; want none, as the user placed it on %s only", b, err, a)
		}
	})

	t.Run("turning it on for a running workload overwrites and deletes nothing", func(t *testing.T) {
		createObject(t, host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-config"}, Data: map[string]string{"mode": "host"}})
		// a already has a ConfigMap of the name that Fedwarden does not manage.
		createObject(t, members[a], &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-config"}, Data: map[string]string{"mode": "mine"}})
		legacy := dependentDeployment(t, ns, "legacy", "legacy-config", "", "", a, b)
		_ = unstructured.SetNestedField(legacy.Object, false, "spec", "propagateDependencies")
		createObject(t, host, legacy)
		uids := map[string]types.UID{}
		for _, cluster := range []string{a, b} {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy"}}
			waitForMemberObject(t, members[cluster], cluster, d, nil)
			uids[cluster] = d.UID
		}
		patchFederated(t, host, ns, "legacy", func(obj *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(obj.Object, true, "spec", "propagateDependencies")
		})
		waitForEntry(t, host, ns, "configmap-legacy-config", a, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.AlreadyExists })
		waitForMemberConfigMap(t, members[b], b, ns, "legacy-config", "host")
		waitForMemberConfigMap(t, members[a], a, ns, "legacy-config", "mine")

		// Off again: the derived resource goes, with the copy it wrote in
		// b; a's own ConfigMap stays, and so do the Deployments.
		patchFederated(t, host, ns, "legacy", func(obj *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(obj.Object, false, "spec", "propagateDependencies")
		})
		waitForAbsent(t, members[b], &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy-config"}}, b, settleWithin)
		waitForMemberConfigMap(t, members[a], a, ns, "legacy-config", "mine")
		for _, cluster := range []string{a, b} {
			d, err := memberDeploymentOf(t.Context(), members[cluster], ns, "legacy")
			if err != nil || d.UID != uids[cluster] {
				t.Errorf("the Deployment in %s: %v, UID %s; want the one that ran before, UID %s", cluster, err, d.UID, uids[cluster])
			}
		}
		cm := &corev1.ConfigMap{}
		if err := members[a].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "legacy-config"}, cm); err != nil || cm.Labels[typesv1beta1.LabelManaged] != "" {
			t.Errorf("a's own ConfigMap: %v, labels %v; want it as it was, not managed", err, cm.Labels)
		}
	})

	t.Run("deleting the workload removes what only it needed", func(t *testing.T) {
		if err := host.Delete(t.Context(), dependentDeployment(t, ns, "web", "web-config", "", "", a)); err != nil {
			t.Fatal(err)
		}
		waitForAbsent(t, members[a], &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, a, settleWithin)
		waitForAbsent(t, members[a], &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-secret"}}, a, settleWithin)
		// The host objects are the user's: they stay.
		if err := host.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "web-config"}, &corev1.ConfigMap{}); err != nil {
			t.Errorf("the host ConfigMap: %v; want it kept", err)
		}
	})
}

// dependentDeployment is a FederatedDeployment under propagateDependencies
// that mounts ConfigMap config, and runs as sa and reads the Secret secret
// when they are named.
func dependentDeployment(t *testing.T, ns, name, config, sa, secret string, clusters ...string) *unstructured.Unstructured {
	t.Helper()
	var placed []any
	for _, c := range clusters {
		placed = append(placed, map[string]any{"name": c})
	}
	container := map[string]any{"name": "web", "image": "nginx:1.27"}
	if secret != "" {
		container["env"] = []any{map[string]any{"name": "PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": secret, "key": "password"}}}}
	}
	pod := map[string]any{
		"containers": []any{container},
		"volumes":    []any{map[string]any{"name": "config", "configMap": map[string]any{"name": config}}},
	}
	if sa != "" {
		pod["serviceAccountName"] = sa
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedDeployment",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"propagateDependencies": true,
			"placement":             map[string]any{"clusters": placed},
			"template": map[string]any{"spec": map[string]any{
				"replicas": int64(1),
				"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
				"template": map[string]any{
					"metadata": map[string]any{"labels": map[string]any{"app": name}},
					"spec":     pod,
				},
			}},
		},
	}}
}

// memberDeploymentOf reads a member's Deployment.
func memberDeploymentOf(ctx context.Context, c client.Client, ns, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	return d, c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d)
}

// federatedStatusOf reads the status of a federated resource.
func federatedStatusOf(obj *unstructured.Unstructured) (typesv1beta1.FederatedStatus, error) {
	var st typesv1beta1.FederatedStatus
	raw, _, err := unstructured.NestedMap(obj.Object, "status")
	if err != nil || raw == nil {
		return st, err
	}
	return st, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st)
}

func waitForMemberObject(t *testing.T, c client.Client, cluster string, obj client.Object, ok func(client.Object) bool) {
	t.Helper()
	poll.Eventually(t, settleWithin, fmt.Sprintf("%T %s in %s", obj, client.ObjectKeyFromObject(obj), cluster), func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		return ok == nil || ok(obj), "present, not as wanted yet"
	})
}

func waitForMemberConfigMap(t *testing.T, c client.Client, cluster, ns, name, mode string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	poll.Eventually(t, settleWithin, fmt.Sprintf("ConfigMap %s/%s in %s with mode %s", ns, name, cluster, mode), func(ctx context.Context) (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["mode"] == mode && cm.DeletionTimestamp == nil, fmt.Sprintf("mode %q", cm.Data["mode"])
	})
}

func waitForAbsentDeployment(t *testing.T, c client.Client, cluster, ns, name string) {
	t.Helper()
	poll.Eventually(t, settleWithin, fmt.Sprintf("Deployment %s/%s gone from %s", ns, name, cluster), func(ctx context.Context) (bool, string) {
		_, err := memberDeploymentOf(ctx, c, ns, name)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

func patchHost(t *testing.T, c client.Client, obj client.Object, patch string) {
	t.Helper()
	if err := c.Patch(t.Context(), obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
}

// waitForDependencies waits for the workload's DependenciesPropagated
// condition to be status, and its status.dependencies to be want.
func waitForDependencies(t *testing.T, c client.Client, ns, name string, status metav1.ConditionStatus, want map[string]typesv1beta1.DependencyState) {
	t.Helper()
	poll.Eventually(t, settleWithin, "the dependencies in the status of "+name, func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("types.kubefed.io/v1beta1")
		obj.SetKind("FederatedDeployment")
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		st, err := federatedStatusOf(obj)
		if err != nil {
			return false, err.Error()
		}
		got := map[string]typesv1beta1.DependencyState{}
		for _, d := range st.Dependencies {
			got[d.Kind+"/"+d.Name] = d.State
		}
		cond := meta.FindStatusCondition(st.Conditions, typesv1beta1.FederatedDependencies)
		if cond == nil || cond.Status != status || fmt.Sprint(got) != fmt.Sprint(want) {
			return false, fmt.Sprintf("condition %+v, dependencies %+v", cond, st.Dependencies)
		}
		return true, ""
	})
}

// waitForDerivedOwners waits for the derived FederatedConfigMap name to
// be owned by exactly owners.
func waitForDerivedOwners(t *testing.T, c client.Client, ns, name string, owners ...string) {
	t.Helper()
	sort.Strings(owners)
	poll.Eventually(t, settleWithin, "the owners of FederatedConfigMap "+name, func(ctx context.Context) (bool, string) {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("types.kubefed.io/v1beta1")
		obj.SetKind("FederatedConfigMap")
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
			return false, err.Error()
		}
		raw := obj.GetAnnotations()[typesv1beta1.AnnotationDependencyOf]
		for _, o := range owners {
			if !strings.Contains(raw, `"`+o+`"`) {
				return false, raw
			}
		}
		return strings.Count(raw, `"clusters"`) == len(owners) && obj.GetLabels()[typesv1beta1.LabelDependency] == "true", raw
	})
}

func statusText(t *testing.T, c client.Client, kind, ns, name string) string {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind(kind)
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(obj.Object["status"])
}

// firstWrites records the etcd revision at which each object of a
// namespace of a member was created, from watches started before anything
// was written there: one etcd orders every write of a member, so that a
// smaller revision is an earlier write. (Revisions are opaque to clients
// in general; the test bed's single etcd per member makes them comparable.)
type firstWrites struct {
	mu      sync.Mutex
	created map[string]uint64
}

func watchFirstWrites(t *testing.T, cfg *rest.Config, ns string) *firstWrites {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fw := &firstWrites{created: map[string]uint64{}}
	lists := map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "ConfigMap": &corev1.ConfigMapList{},
		"Secret": &corev1.SecretList{}, "ServiceAccount": &corev1.ServiceAccountList{},
	}
	for kind, list := range lists {
		w, err := c.Watch(t.Context(), list, client.InNamespace(ns))
		if err != nil {
			t.Fatalf("watching %s in %s: %v", kind, ns, err)
		}
		t.Cleanup(w.Stop)
		go func() {
			for e := range w.ResultChan() {
				o, ok := e.Object.(client.Object)
				if !ok || e.Type != watch.Added {
					continue
				}
				rv, _ := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
				fw.mu.Lock()
				if _, seen := fw.created[kind+"/"+o.GetName()]; !seen {
					fw.created[kind+"/"+o.GetName()] = rv
				}
				fw.mu.Unlock()
			}
		}()
	}
	return fw
}

// checkBefore fails unless each of before was created before first.
func (fw *firstWrites) checkBefore(t *testing.T, first string, before ...string) {
	t.Helper()
	poll.Eventually(t, settleWithin, "the watches to see "+first+" created", func(context.Context) (bool, string) {
		fw.mu.Lock()
		defer fw.mu.Unlock()
		_, ok := fw.created[first]
		return ok, fmt.Sprint(fw.created)
	})
	fw.mu.Lock()
	defer fw.mu.Unlock()
	for _, b := range before {
		if rv, ok := fw.created[b]; !ok || rv >= fw.created[first] {
			t.Errorf("%s was created at revision %d, %s at %d (seen: %t): want every dependency written before the workload", first, fw.created[first], b, rv, ok)
		}
	}
}

// checkPlannedDependencies runs fedwarden plan -f on obj and checks what
// it says of its dependencies: state +adds -removes, by kind/name.
func checkPlannedDependencies(t *testing.T, obj *unstructured.Unstructured, want map[string]string) {
	t.Helper()
	raw, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "web.yaml")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runFedwarden(t, "plan", "-f", file, "-o", "json", "--host-kubeconfig", fed.Host.Kubeconfig)
	var report planreport.Report
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		t.Fatalf("plan -o json: %v\n%s", err, r)
	}
	got := map[string]string{}
	for _, d := range report.Dependencies {
		got[d.Kind+"/"+d.Name] = fmt.Sprintf("%s +%v -%v", d.State, d.Adds, d.Removes)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("plan's dependencies: %v; want %v", got, want)
	}
	text := runFedwarden(t, "plan", "-f", file, "--host-kubeconfig", fed.Host.Kubeconfig)
	if !strings.Contains(text.stdout, "Dependencies (spec.propagateDependencies):") {
		t.Errorf("plan's text does not list the dependencies:\n%s", text.stdout)
	}
}
