package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/fedwarden/fedwarden/internal/notify"
)

// The notification webhooks reach the controller-manager as one
// --notify-webhook each, with their filters, in a form it accepts; the CA
// Secret is mounted where --notify-ca-file points.
func TestNotificationValues(t *testing.T) {
	needHelm(t)
	t.Parallel()
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte(`notifications:
  webhooks:
    - url: https://127.0.0.1:9/x?token=abc
      namespaces: [shop, pay]
      kinds: [Deployment]
      states: [ModifiedOutOfBand, Missing]
      remediations: [Alert]
    - url: http://127.0.0.1:9999/all
  consoleURL: https://127.0.0.1:9/
  caSecret: hooks-ca
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	find(t, mustRender(t, "-f", values), "Deployment", &d)
	c := d.Spec.Template.Spec.Containers[0]
	want := []string{
		"--notify-webhook=https://127.0.0.1:9/x?token=abc kind=Deployment namespace=shop,pay remediation=Alert state=ModifiedOutOfBand,Missing",
		"--notify-webhook=http://127.0.0.1:9999/all",
		"--notify-ca-file=/etc/fedwarden/notify-ca/ca.crt", "--console-url=https://127.0.0.1:9/",
		"--notify-queue-size=1000", "--notify-timeout=10s", "--notify-attempts=5",
	}
	for _, arg := range want {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("args %q lack %q", c.Args, arg)
		}
	}
	o := notify.DefaultOptions()
	for _, arg := range c.Args {
		if hook, ok := strings.CutPrefix(arg, "--notify-webhook="); ok {
			o.Webhooks = append(o.Webhooks, hook)
		}
	}
	if err := o.Validate(); err != nil {
		t.Errorf("the controller-manager refuses the chart's webhooks: %v", err)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "notify-ca" && m.MountPath == "/etc/fedwarden/notify-ca"
	}) {
		t.Errorf("mounts %+v lack the notify CA", c.VolumeMounts)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "notify-ca" && v.Secret != nil && v.Secret.SecretName == "hooks-ca"
	}) {
		t.Errorf("volumes %+v lack the Secret hooks-ca", d.Spec.Template.Spec.Volumes)
	}

	var plain appsv1.Deployment
	find(t, mustRender(t), "Deployment", &plain)
	if args := plain.Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool {
		return strings.HasPrefix(a, "--notify") || strings.HasPrefix(a, "--console-url")
	}) {
		t.Errorf("without webhooks, args %q configure notifications", args)
	}
}

// Webhooks from a Secret reach the controller-manager as a mounted file,
// --notify-webhooks-file, and never as arguments.
func TestNotificationWebhooksSecret(t *testing.T) {
	needHelm(t)
	t.Parallel()
	var d appsv1.Deployment
	find(t, mustRender(t, "--set", "notifications.webhooksSecret=chat-hooks"), "Deployment", &d)
	c := d.Spec.Template.Spec.Containers[0]
	if !slices.Contains(c.Args, "--notify-webhooks-file=/etc/fedwarden/notify-webhooks/webhooks") || !slices.Contains(c.Args, "--notify-queue-size=1000") ||
		slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--notify-webhook=") }) {
		t.Errorf("args %q; want --notify-webhooks-file and the queue flags, no --notify-webhook", c.Args)
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return m.Name == "notify-webhooks" && m.MountPath == "/etc/fedwarden/notify-webhooks" && m.ReadOnly
	}) {
		t.Errorf("mounts %+v lack the webhooks Secret", c.VolumeMounts)
	}
	if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
		return v.Name == "notify-webhooks" && v.Secret != nil && v.Secret.SecretName == "chat-hooks" && len(v.Secret.Items) == 1 && v.Secret.Items[0].Key == "webhooks"
	}) {
		t.Errorf("volumes %+v lack the Secret chat-hooks's key webhooks", d.Spec.Template.Spec.Volumes)
	}
}

// In agent mode the same values configure the agent, which sends its
// cluster's drift notifications (the host sends none for a Pull cluster):
// its webhooks, the webhooks Secret and the CA, mounted as for the
// controller-manager.
func TestAgentNotificationValues(t *testing.T) {
	needHelm(t)
	t.Parallel()
	var d appsv1.Deployment
	find(t, mustRender(t, "--set", "controllerManager.enabled=false", "--set", "agent.enabled=true", "--set", "agent.clusterName=edge",
		"--set", "notifications.webhooks[0].url=http://127.0.0.1:9999/edge", "--set", "notifications.webhooksSecret=chat-hooks",
		"--set", "notifications.caSecret=hooks-ca"), "Deployment", &d)
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "agent" {
		t.Fatalf("the Deployment found runs %q, not the agent", c.Args)
	}
	for _, arg := range []string{"--notify-webhook=http://127.0.0.1:9999/edge", "--notify-webhooks-file=/etc/fedwarden/notify-webhooks/webhooks",
		"--notify-ca-file=/etc/fedwarden/notify-ca/ca.crt", "--notify-queue-size=1000"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("agent args %q lack %q", c.Args, arg)
		}
	}
	for _, name := range []string{"host-kubeconfig", "notify-ca", "notify-webhooks"} {
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name && m.ReadOnly }) {
			t.Errorf("agent mounts %+v lack %s", c.VolumeMounts, name)
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == name && v.Secret != nil }) {
			t.Errorf("agent volumes %+v lack %s", d.Spec.Template.Spec.Volumes, name)
		}
	}
	var plain appsv1.Deployment
	find(t, mustRender(t, "--set", "controllerManager.enabled=false", "--set", "agent.enabled=true", "--set", "agent.clusterName=edge"), "Deployment", &plain)
	if args := plain.Spec.Template.Spec.Containers[0].Args; slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--notify") }) {
		t.Errorf("without webhooks, agent args %q configure notifications", args)
	}
}
