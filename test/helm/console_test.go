package helm

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// consoleValues render the chart with the web console.
var consoleValues = []string{"--set", "console.enabled=true"}

// TestConsole renders the chart with console.enabled and checks what a
// security reviewer of the console looks for: it runs `fedwarden console
// --auth=token`, its ServiceAccount mounts no token and no Role or
// ClusterRole is bound to it, and the API server accepts its objects.
func TestConsole(t *testing.T) {
	needHelm(t)
	t.Parallel()
	if _, err := helm(append([]string{"lint", "--strict", chart, "--namespace", namespace}, consoleValues...)...); err != nil {
		t.Errorf("lint with console.enabled: %v", err)
	}
	for _, o := range mustRender(t) {
		if o.GetLabels()["app.kubernetes.io/component"] == "console" {
			t.Errorf("the default values render %s, though console.enabled is false", describe(o))
		}
	}
	objs := mustRender(t, consoleValues...)
	var sa corev1.ServiceAccount
	findNamed(t, objs, "ServiceAccount", "fedwarden-console", &sa)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("the console's ServiceAccount mounts its token")
	}
	var d appsv1.Deployment
	findNamed(t, objs, "Deployment", "fedwarden-console", &d)
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("the console's pods run as %q with automountServiceAccountToken %v; want %s and false", pod.ServiceAccountName, pod.AutomountServiceAccountToken, sa.Name)
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	for _, arg := range []string{"console", "--auth=token", "--address=0.0.0.0:8800", "--allow-remote", "--host-ca-file=/etc/fedwarden/host-ca/ca.crt", // loopback-check: not dialed
		"--control-plane-namespace=" + namespace} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %q", c.Args, arg)
		}
	}
	for _, v := range pod.Volumes {
		if v.Secret != nil || v.Projected != nil || v.ConfigMap == nil || v.ConfigMap.Name != "kube-root-ca.crt" {
			t.Errorf("the console mounts %+v; it needs only the host's CA (the ConfigMap kube-root-ca.crt)", v)
		}
	}
	if sc := c.SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("the console's security context %+v", sc)
	}
	var svc corev1.Service
	findNamed(t, objs, "Service", "fedwarden-console", &svc)
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.String() != "http" || svc.Spec.Selector["app.kubernetes.io/component"] != "console" {
		t.Errorf("the console's Service %+v", svc.Spec)
	}
	checkConsoleHasNoRights(t, objs, sa.Name)
	checkConsoleAccepted(t, objs)
}

// checkConsoleHasNoRights checks that no rendered binding names the
// console's ServiceAccount.
func checkConsoleHasNoRights(t *testing.T, objs []*unstructured.Unstructured, sa string) {
	t.Helper()
	for _, o := range objs {
		var subjects []rbacv1.Subject
		switch o.GetKind() {
		case "RoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				t.Fatal(err)
			}
			subjects = b.Subjects
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &b); err != nil {
				t.Fatal(err)
			}
			subjects = b.Subjects
		default:
			continue
		}
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Name == sa || s.Kind == rbacv1.GroupKind && strings.HasPrefix(s.Name, "system:serviceaccounts") {
				t.Errorf("%s binds %s %s: the console must have no rights of its own", describe(o), s.Kind, s.Name)
			}
		}
	}
}

// checkConsoleAccepted applies the console's objects to the host with
// server-side dry-run.
func checkConsoleAccepted(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	c, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, o := range objs {
		if o.GetLabels()["app.kubernetes.io/component"] != "console" {
			continue
		}
		if _, err := dryRunApply(ctx, c, o); err != nil {
			t.Errorf("the API server refuses %s: %v", describe(o), err)
		}
	}
}
