package helm

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestControllerManagerWorksWithTheChartsRights runs the real
// controller-manager with the arguments the chart's Deployment gives it, as
// the chart's ServiceAccount with only the chart's RBAC, and checks that it
// does its work: a member joins and turns Ready, a kind is enabled, a
// FederatedConfigMap reaches the member and is recorded in its CPV, Events
// are written, a leader is elected; and nothing it tried was forbidden.
func TestControllerManagerWorksWithTheChartsRights(t *testing.T) {
	needHelm(t)
	t.Parallel()
	admin, err := newClient(nil)
	if err != nil {
		t.Fatal(err)
	}
	bin, cm, metricsCA := startWithChartsRights(t, admin)
	run := func(args ...string) {
		t.Helper()
		r, err := fedtest.Run(t.Context(), bin, args...)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != 0 {
			t.Fatalf("fedwarden %s:\n%s", strings.Join(args, " "), r)
		}
	}
	// join waits until the cluster is Ready: the health controller read the
	// credentials and wrote the status.
	run(fedtest.JoinArgs(fed, fed.Members[0], "member-1", "--namespace", namespace, "--timeout", "90s")...)
	run("enable", "configmaps", "--host-kubeconfig", fed.Host.Kubeconfig)
	poll.Eventually(t, 60*time.Second, "FederatedTypeConfig configmaps to be Established", func(ctx context.Context) (bool, string) {
		ftc := &corev1beta1.FederatedTypeConfig{}
		if err := admin.Get(ctx, client.ObjectKey{Name: "configmaps"}, ftc); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(ftc.Status.Conditions, corev1beta1.TypeConfigEstablished) && slices.Contains(ftc.Finalizers, "fedwarden.io/release-federated-resources"),
			fmt.Sprintf("finalizers %v, status %+v", ftc.Finalizers, ftc.Status)
	})
	checkPropagates(t, admin)
	lease := &coordinationv1.Lease{}
	if err := admin.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "fedwarden-controller-manager"}, lease); err != nil {
		t.Fatalf("no leader-election Lease: %v", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the Lease has no holder: %+v", lease.Spec)
	}
	t.Run("NoSecretLeaves: metrics need authentication and authorization", func(t *testing.T) {
		checkMetricsNeedAuthorization(t, cm, metricsCA)
	})
	log, err := os.ReadFile(cm.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(log), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			t.Errorf("the controller-manager was refused something: %s", line)
		}
	}
}

// startWithChartsRights applies the chart's ServiceAccount and RBAC to the
// host, and starts the controller-manager built from this tree with the
// chart's arguments, as that ServiceAccount; it waits until the
// controller-manager answers the probes the chart's Deployment uses. The
// chart is rendered with metricsValues: its metrics certificate, issued by
// a CA of the test, is mounted where the Deployment says. It returns the
// fedwarden binary, the controller-manager, stopped at the end of the test,
// and the CA of its metrics certificate.
func startWithChartsRights(t *testing.T, admin client.Client) (string, *fedtest.ControllerManager, *x509.CertPool) {
	t.Helper()
	objs := mustRender(t, metricsValues...)
	applyRights(t, admin, objs)
	var d appsv1.Deployment
	find(t, objs, "Deployment", &d)
	var sa corev1.ServiceAccount
	find(t, objs, "ServiceAccount", &sa)

	dir := t.TempDir()
	kubeconfig, err := serviceAccountKubeconfig(dir, sa.Name)
	if err != nil {
		t.Fatal(err)
	}
	bin, err := fedtest.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	probePort, err := fedtest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The chart's arguments, but for the addresses (several controller-
	// managers may run on this machine) and the certificate's directory.
	args := []string{"--kubeconfig", kubeconfig, "--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(probePort)}
	var metricsCA *x509.CertPool
	for _, arg := range d.Spec.Template.Spec.Containers[0].Args[1:] {
		switch {
		case strings.HasPrefix(arg, "--metrics-bind-address="), strings.HasPrefix(arg, "--health-probe-bind-address="):
		case strings.HasPrefix(arg, "--metrics-cert-dir="):
			certs := filepath.Join(dir, "metrics-certs")
			if metricsCA, err = writeMetricsCertificate(certs); err != nil {
				t.Fatal(err)
			}
			args = append(args, "--metrics-cert-dir="+certs)
		default:
			args = append(args, arg)
		}
	}
	if metricsCA == nil {
		t.Fatalf("the Deployment's arguments %q give no --metrics-cert-dir with metrics.certSecret", d.Spec.Template.Spec.Containers[0].Args)
	}
	s := fedtest.SteadySettings
	s.Args = args
	cm, err := fedtest.StartControllerManager(bin, fed, dir, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cm.Stop(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if log, err := os.ReadFile(cm.LogPath); err == nil {
				t.Logf("controller-manager log:\n%s", log)
			}
		}
	})
	c := d.Spec.Template.Spec.Containers[0]
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		poll.Eventually(t, 60*time.Second, "the controller-manager to answer "+p.HTTPGet.Path, func(ctx context.Context) (bool, string) {
			return probe(ctx, fmt.Sprintf("http://127.0.0.1:%d%s", probePort, p.HTTPGet.Path))
		})
	}
	return bin, cm, metricsCA
}

// applyRights applies the ServiceAccount and RBAC of the rendered chart
// objs to the host.
func applyRights(t *testing.T, admin client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, obj := range objs {
		if slices.Contains([]string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}, obj.GetKind()) {
			err := admin.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj.DeepCopy()), client.FieldOwner("helm"), client.ForceOwnership)
			if err != nil {
				t.Fatalf("applying %s: %v", describe(obj), err)
			}
		}
	}
}

// checkPropagates creates a FederatedConfigMap placed on member-1 and
// waits until the member has the ConfigMap and the CPV records its
// version; then edits the copy by hand and waits until it is healed and
// an Event tells about it (a new resource placed as its placement says
// raises none).
func checkPropagates(t *testing.T, admin client.Client) {
	t.Helper()
	const ns, name = "rights", "settings"
	if err := admin.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	fcm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1",
		"kind":       "FederatedConfigMap",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"template":  map[string]any{"data": map[string]any{"greeting": "hello"}},
			"placement": map[string]any{"clusters": []any{map[string]any{"name": "member-1"}}},
		},
	}}
	if err := admin.Create(t.Context(), fcm); err != nil {
		t.Fatal(err)
	}
	member, err := newClient(fed.Members[0].Config)
	if err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 60*time.Second, "the ConfigMap in member-1", func(ctx context.Context) (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["greeting"] == "hello", fmt.Sprint(cm.Data)
	})
	poll.Eventually(t, 30*time.Second, "the CPV to record member-1's version", func(ctx context.Context) (bool, string) {
		cpv := &typesv1beta1.ClusterPropagatedVersion{}
		if err := admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "configmap-" + name}, cpv); err != nil {
			return false, err.Error()
		}
		ok := len(cpv.Status.ClusterVersions) == 1 && cpv.Status.ClusterVersions[0].ClusterName == "member-1" && cpv.Status.ClusterVersions[0].Version != ""
		return ok, fmt.Sprintf("%+v", cpv.Status.ClusterVersions)
	})
	cm := &corev1.ConfigMap{}
	if err := member.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["greeting"] = "edited by hand"
	if err := member.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 60*time.Second, "the hand edit in member-1 healed", func(ctx context.Context) (bool, string) {
		if err := member.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm); err != nil {
			return false, err.Error()
		}
		return cm.Data["greeting"] == "hello", fmt.Sprint(cm.Data)
	})
	poll.Eventually(t, 30*time.Second, "an Event on the FederatedConfigMap", func(ctx context.Context) (bool, string) {
		var events eventsv1.EventList
		if err := admin.List(ctx, &events, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return slices.ContainsFunc(events.Items, func(e eventsv1.Event) bool { return e.Regarding.Name == name }), fmt.Sprintf("%d events", len(events.Items))
	})
}

// serviceAccountKubeconfig writes a kubeconfig of the host that
// authenticates as the ServiceAccount name of the release namespace, with
// the groups a ServiceAccount token carries, and returns its path.
func serviceAccountKubeconfig(dir, name string) (string, error) {
	user := "system:serviceaccount:" + namespace + ":" + name
	cfg, err := fed.Host.ConfigForUser(user, "system:serviceaccounts", "system:serviceaccounts:"+namespace)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "serviceaccount.kubeconfig")
	kc := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"host": {Server: cfg.Host, CertificateAuthorityData: cfg.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{name: {ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}},
		Contexts:       map[string]*clientcmdapi.Context{"host": {Cluster: "host", AuthInfo: name}},
		CurrentContext: "host",
	}
	if err := clientcmd.WriteToFile(kc, path); err != nil {
		return "", fmt.Errorf("writing the ServiceAccount's kubeconfig: %w", err)
	}
	return path, nil
}

// probe GETs url and tells whether it answered 200, as the kubelet checks.
func probe(ctx context.Context, url string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}
