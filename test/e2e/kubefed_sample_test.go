package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/poll"
)

const kubefedExamples = "../conformance/kubefed-v0.10.0"

// kubectl runs kubectl against a kubeconfig, as a user would: the kubectl
// make tools builds, of the tests' Kubernetes version, not whichever one is
// on the PATH.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(t.Context(), kubectlPath(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// kubectlPath is bin/kubectl, in the directory of the other Kubernetes
// binaries (FEDWARDEN_BIN_DIR, else bin/ of the module); the test fails if
// it is missing.
func kubectlPath(t *testing.T) string {
	t.Helper()
	dir, err := localfed.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubectl")
	switch info, err := os.Stat(path); {
	case err != nil:
		t.Fatalf("kubectl, which this test runs as a user would: %v (build it with make tools, or set FEDWARDEN_BIN_DIR to a directory that has it)", err)
	case info.IsDir() || info.Mode().Perm()&0o111 == 0:
		t.Fatalf("%s is not an executable file", path)
	}
	return path
}

// KubeFed's own sample, applied unchanged with kubectl to a federation whose
// members are named as in KubeFed's docs, gives exactly the expected object
// in each member. This test changes a FederatedNamespace's placement, so it
// has a test bed of its own.
func TestKubeFedSample1(t *testing.T) {
	skipInShortMode(t)
	kubectlPath(t) // no kubectl, no test bed to start
	t.Parallel()
	bed := startBed(t, localfed.WithMemberNames("cluster1", "cluster2"))
	startControllerManager(t, bed, steadyProbes)
	for _, m := range bed.Fed.Members {
		// The sample federates a ClusterRole granting everything and a
		// binding to cluster-admin: that needs --propagate-rbac.
		if r := runFedwarden(t, joinArgs(bed.Fed, m, m.Name, "--propagate-rbac")...); r.code != 0 {
			t.Fatalf("joining %s failed:\n%s", m.Name, r)
		}
	}
	if r := runFedwarden(t, "enable", "-f", filepath.Join(kubefedExamples, "enabletypedirectives"), "--host-kubeconfig", bed.Fed.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("enabling KubeFed's types failed:\n%s", r)
	}
	// KubeFed's directives do not cover the sample's ClusterRoleBinding.
	if r := runFedwarden(t, "enable", "clusterrolebindings.rbac.authorization.k8s.io", "--host-kubeconfig", bed.Fed.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("enabling ClusterRoleBindings failed:\n%s", r)
	}
	sample := filepath.Join(kubefedExamples, "sample1")
	kubectl(t, bed.Fed.Host.Kubeconfig, "apply", "-f", filepath.Join(sample, "namespace.yaml"))
	files, err := filepath.Glob(filepath.Join(sample, "federated*.yaml"))
	if err != nil || len(files) != 10 {
		t.Fatalf("want the 10 federated manifests of sample1, got %v (%v)", files, err)
	}
	for _, f := range files {
		kubectl(t, bed.Fed.Host.Kubeconfig, "apply", "-f", f)
	}

	c1, c2 := newClient(t, bed.Fed.Members[0].Config), newClient(t, bed.Fed.Members[1].Config)
	for _, mc := range []client.Client{c1, c2} {
		waitFor(t, mc, &corev1.Namespace{}, "", "test-namespace")
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.ConfigMap{}, &corev1.Secret{}, &corev1.Service{}, &corev1.ServiceAccount{}, &batchv1.Job{}, &networkingv1.Ingress{}} {
			waitFor(t, mc, obj, "test-namespace", "test-"+strings.ToLower(fmt.Sprintf("%T", obj)[strings.LastIndex(fmt.Sprintf("%T", obj), ".")+1:]))
		}
		waitFor(t, mc, &rbacv1.ClusterRole{}, "", "test-clusterrole")
		waitFor(t, mc, &rbacv1.ClusterRoleBinding{}, "", "test-clusterrolebinding")
	}
	checkSampleObjects(t, c1, c2)

	// As in KubeFed, a namespaced resource reaches only the clusters its
	// FederatedNamespace is placed on.
	kubectl(t, bed.Fed.Host.Kubeconfig, "-n", "test-namespace", "patch", "federatednamespace", "test-namespace", "--type=merge", "-p", `{"spec":{"placement":{"clusters":[{"name":"cluster1"}]}}}`)
	poll.Eventually(t, 60*time.Second, "the namespace and its objects to leave cluster2", func(ctx context.Context) (bool, string) {
		ns := &corev1.Namespace{}
		err := c2.Get(ctx, types.NamespacedName{Name: "test-namespace"}, ns)
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprintf("namespace: %v, phase %s", err, ns.Status.Phase)
	})
	host := bed.Host
	poll.Eventually(t, 30*time.Second, "the configmap's CPV to list only cluster1", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, host, "test-namespace", "configmap-test-configmap")
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, cv := range cpv.Status.ClusterVersions {
			names = append(names, string(cv.ClusterName))
		}
		return slices.Equal(names, []string{"cluster1"}) && len(cpv.Spec.Clusters) == 1, fmt.Sprintf("%v, spec %v", names, cpv.Spec.Clusters)
	})
	if err := c1.Get(t.Context(), types.NamespacedName{Namespace: "test-namespace", Name: "test-configmap"}, &corev1.ConfigMap{}); err != nil {
		t.Errorf("cluster1 lost its ConfigMap: %v", err)
	}

	// Disabling a type stops its controller at run time: edits no longer
	// propagate, and copies stay. Enabling it again catches up.
	if r := runFedwarden(t, "disable", "configmaps", "--host-kubeconfig", bed.Fed.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("disable failed:\n%s", r)
	}
	waitForTypeConfigState(t, host, "configmaps", corev1beta1.ControllerStatusNotRunning, corev1beta1.ReasonPropagationDisabled, 30*time.Second)
	kubectl(t, bed.Fed.Host.Kubeconfig, "-n", "test-namespace", "patch", "federatedconfigmap", "test-configmap", "--type=merge", "-p", `{"spec":{"template":{"data":{"A":"changed"}}}}`)
	if r := runFedwarden(t, "enable", "configmaps", "--host-kubeconfig", bed.Fed.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("enable failed:\n%s", r)
	}
	waitForTypeConfigState(t, host, "configmaps", corev1beta1.ControllerStatusRunning, corev1beta1.ReasonControllerRunning, 30*time.Second)
	poll.Eventually(t, 30*time.Second, "the edit made while disabled to reach cluster1", func(ctx context.Context) (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := c1.Get(ctx, types.NamespacedName{Namespace: "test-namespace", Name: "test-configmap"}, cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["A"] == "changed", fmt.Sprint(cm.Data)
	})
}

// waitFor waits until the member has the object.
func waitFor(t *testing.T, c client.Client, obj client.Object, namespace, name string) {
	t.Helper()
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("%T %s/%s", obj, namespace, name), func(ctx context.Context) (bool, string) {
		err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj)
		if err != nil {
			return false, err.Error()
		}
		return obj.GetLabels()[typesv1beta1.LabelManaged] == "true", fmt.Sprintf("labels %v", obj.GetLabels())
	})
}

// checkSampleObjects checks the content the sample's templates and
// overrides give each cluster.
func checkSampleObjects(t *testing.T, c1, c2 client.Client) {
	t.Helper()
	get := func(c client.Client, obj client.Object, namespace, name string) {
		t.Helper()
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
			t.Fatal(err)
		}
	}
	var d1, d2 appsv1.Deployment
	get(c1, &d1, "test-namespace", "test-deployment")
	get(c2, &d2, "test-namespace", "test-deployment")
	if *d1.Spec.Replicas != 3 || d1.Spec.Template.Spec.Containers[0].Image != "nginx" {
		t.Errorf("cluster1 Deployment: replicas %d, image %s; want 3, nginx", *d1.Spec.Replicas, d1.Spec.Template.Spec.Containers[0].Image)
	}
	if *d2.Spec.Replicas != 5 || d2.Spec.Template.Spec.Containers[0].Image != "nginx:1.17.0-alpine" {
		t.Errorf("cluster2 Deployment: replicas %d, image %s; want 5, nginx:1.17.0-alpine", *d2.Spec.Replicas, d2.Spec.Template.Spec.Containers[0].Image)
	}
	if _, found := d2.Annotations["foo"]; found {
		t.Errorf("cluster2 Deployment keeps annotation foo, which the last override removes: %v", d2.Annotations)
	}
	var cm1, cm2 corev1.ConfigMap
	get(c1, &cm1, "test-namespace", "test-configmap")
	get(c2, &cm2, "test-namespace", "test-configmap")
	if len(cm1.Data) != 1 || cm1.Data["A"] != "ala ma kota" || len(cm2.Data) != 1 || cm2.Data["foo"] != "bar" {
		t.Errorf("ConfigMaps: cluster1 %v (want A), cluster2 %v (want only foo)", cm1.Data, cm2.Data)
	}
	var s1, s2 corev1.Secret
	get(c1, &s1, "test-namespace", "test-secret")
	get(c2, &s2, "test-namespace", "test-secret")
	if string(s1.Data["A"]) != "ala ma kota" || len(s2.Data) != 0 {
		t.Errorf("Secrets: cluster1 has %d keys (want A), cluster2 %d keys (want none)", len(s1.Data), len(s2.Data))
	}
	var j1, j2 batchv1.Job
	get(c1, &j1, "test-namespace", "test-job")
	get(c2, &j2, "test-namespace", "test-job")
	if *j1.Spec.Parallelism != 1 || *j2.Spec.Parallelism != 2 {
		t.Errorf("Jobs: parallelism %d and %d, want 1 and 2", *j1.Spec.Parallelism, *j2.Spec.Parallelism)
	}
	var svc corev1.Service
	get(c1, &svc, "test-namespace", "test-service")
	if svc.Spec.Type != corev1.ServiceTypeNodePort || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.ClusterIP == "" {
		t.Errorf("Service: type %s, ports %v, clusterIP %q", svc.Spec.Type, svc.Spec.Ports, svc.Spec.ClusterIP)
	}
	var ing networkingv1.Ingress
	get(c1, &ing, "test-namespace", "test-ingress")
	if b := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service; b == nil || b.Name != "test-service" || b.Port.Number != 80 {
		t.Errorf("Ingress backend = %+v, want test-service:80", ing.Spec.Rules[0].HTTP.Paths[0].Backend)
	}
	var cr rbacv1.ClusterRole
	get(c2, &cr, "", "test-clusterrole")
	if len(cr.Rules) != 1 || !slices.Equal(cr.Rules[0].Verbs, []string{"*"}) {
		t.Errorf("ClusterRole rules = %+v", cr.Rules)
	}
	var crb rbacv1.ClusterRoleBinding
	get(c2, &crb, "", "test-clusterrolebinding")
	if crb.RoleRef.Name != "cluster-admin" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != "test-user" {
		t.Errorf("ClusterRoleBinding = %+v %+v", crb.RoleRef, crb.Subjects)
	}
}
