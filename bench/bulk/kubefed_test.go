package bulk

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// kubefedNamespace is where KubeFed keeps its configuration, clusters and
// their Secrets on the host.
const kubefedNamespace = "kube-federation-system"

// kubefedConfig is the KubeFedConfig that KubeFed v0.10.0's Helm chart
// installs with its default values
// (charts/kubefed/charts/controllermanager/templates/kubefedconfig.yaml),
// but with 8 sync workers instead of 1: KubeFed has no flag for them.
const kubefedConfig = `apiVersion: core.kubefed.io/v1beta1
kind: KubeFedConfig
metadata:
  name: kubefed
  namespace: kube-federation-system
spec:
  scope: Cluster
  controllerDuration:
    availableDelay: 20s
    unavailableDelay: 60s
    cacheSyncTimeout: 5m
  leaderElect:
    leaseDuration: 15s
    renewDeadline: 10s
    retryPeriod: 5s
    resourceLock: configmaps
  clusterHealthCheck:
    period: 10s
    failureThreshold: 3
    successThreshold: 1
    timeout: 3s
  syncController:
    maxConcurrentReconciles: 8
    adoptResources: Enabled
  statusController:
    maxConcurrentReconciles: 1
  featureGates:
  - name: PushReconciler
    configuration: Enabled
  - name: SchedulerPreferences
    configuration: Enabled
`

// runKubeFed, on a bed without Fedwarden's CRDs, installs KubeFed's
// (bin/kubefed-crds.yaml), its KubeFedConfig, the FederatedTypeConfigs of
// namespaces and Deployments (kubefedctl enable), a KubeFedCluster and
// token Secret per member, runs KubeFed's controller-manager and measures
// it. The bed is stopped before it returns.
func runKubeFed(b *testing.B, p params, bd *bed) result {
	ctx := context.Background()
	defer bd.stop(b)
	logf("KubeFed's bed is up: a host without Fedwarden's CRDs and %d members", p.members)
	host := bd.fed.Host.Kubeconfig
	kubectl := func(stdin string, args ...string) {
		run(b, stdin, filepath.Join(p.binDir, "kubectl"), append([]string{"--kubeconfig", host}, args...)...)
	}
	kubectl("", "apply", "--server-side", "-f", filepath.Join(p.binDir, "kubefed-crds.yaml"))
	kubectl("", "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all")
	kubectl("", "create", "namespace", kubefedNamespace)
	kubectl(kubefedConfig, "apply", "-f", "-")
	for _, kind := range []string{"namespaces", "deployments.apps"} {
		run(b, "", filepath.Join(p.binDir, "kubefedctl"), "enable", kind, "--kubeconfig", host, "--kubefed-namespace", kubefedNamespace)
	}
	kubectl("", "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all")
	for _, m := range bd.fed.Members {
		addKubeFedCluster(b, bd, m)
	}

	logf("KubeFed's CRDs, KubeFedConfig, FederatedTypeConfigs and KubeFedClusters are in")
	kf := startKubeFed(b, p.binDir, host, bd.dir)
	defer kf.stop(b)
	waitClustersReady(b, bd)
	logf("KubeFed runs, its clusters are Ready")
	// KubeFed propagates a namespaced resource only into a namespace that
	// is federated.
	var placement []any
	for _, c := range bd.clusters {
		placement = append(placement, map[string]any{"name": c})
	}
	fns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "types.kubefed.io/v1beta1", "kind": "FederatedNamespace",
		"metadata": map[string]any{"name": namespace, "namespace": namespace},
		"spec":     map[string]any{"placement": map[string]any{"clusters": placement}},
	}}
	if err := bd.host.Create(ctx, fns); err != nil {
		b.Fatal(err)
	}
	s := &system{name: "KubeFed", bd: bd, pid: kf.cmd.Process.Pid,
		afterBulk: func() { logQueueMetrics(b, "KubeFed, the moment the bulk's last copy appeared", kf.metricsURL) }}
	r := s.measure(b, p)
	logQueueMetrics(b, "KubeFed, after the latency right after the bulk", kf.metricsURL)
	return r
}

// run runs a command, failing b with its output if it fails.
func run(b *testing.B, stdin, name string, args ...string) {
	b.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
	}
}

// addKubeFedCluster gives KubeFed a member as `kubefedctl join` would: a
// cluster-admin ServiceAccount there, its token in a Secret on the host,
// and a KubeFedCluster pointing at the member's loopback endpoint.
func addKubeFedCluster(b *testing.B, bd *bed, m *localfed.Cluster) {
	ctx := context.Background()
	mc := fedtest.MustKube(b, m.Config)
	const sa = "kubefed-bench"
	if _, err := mc.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "kube-system"}},
	}
	if _, err := mc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	day := int64(24 * 60 * 60)
	tr, err := mc.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-token", Namespace: kubefedNamespace},
		Data:       map[string][]byte{"token": []byte(tr.Status.Token)},
	}
	if _, err := bd.hostKube.CoreV1().Secrets(kubefedNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
		"metadata": map[string]any{"name": m.Name, "namespace": kubefedNamespace},
		"spec": map[string]any{
			"apiEndpoint": m.Endpoint,
			"caBundle":    base64.StdEncoding.EncodeToString(m.CAData),
			"secretRef":   map[string]any{"name": secret.Name},
		},
	}}
	if err := bd.host.Create(ctx, cluster); err != nil {
		b.Fatal(err)
	}
}

// waitClustersReady waits up to two minutes until every KubeFedCluster is
// Ready.
func waitClustersReady(b *testing.B, bd *bed) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("core.kubefed.io/v1beta1")
		list.SetKind("KubeFedClusterList")
		if err := bd.host.List(context.Background(), list, client.InNamespace(kubefedNamespace)); err != nil {
			b.Fatal(err)
		}
		ready := 0
		for _, c := range list.Items {
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			for _, cond := range conds {
				c, _ := cond.(map[string]any)
				if c["type"] == "Ready" && c["status"] == "True" {
					ready++
				}
			}
		}
		if ready == len(bd.members) {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d KubeFedClusters Ready after two minutes", ready, len(bd.members))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kubefedProcess is KubeFed's controller-manager, running.
type kubefedProcess struct {
	cmd        *exec.Cmd
	done       chan struct{}
	metricsURL string
	log        string
}

// startKubeFed runs bin/kubefed-controller-manager against the host, with
// its metrics and health endpoints on 127.0.0.1, and waits until it
// serves its metrics.
func startKubeFed(b *testing.B, binDir, kubeconfig, dir string) *kubefedProcess {
	metricsPort, err := fedtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	healthPort, err := fedtest.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	kf := &kubefedProcess{done: make(chan struct{}), log: filepath.Join(dir, "kubefed-controller-manager.log"),
		metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)}
	logFile, err := os.Create(kf.log)
	if err != nil {
		b.Fatal(err)
	}
	kf.cmd = exec.Command(filepath.Join(binDir, "kubefed-controller-manager"),
		"--kubeconfig", kubeconfig,
		"--kubefed-namespace", kubefedNamespace,
		"--metrics-addr", "127.0.0.1:"+strconv.Itoa(metricsPort),
		"--healthz-addr", "127.0.0.1:"+strconv.Itoa(healthPort),
		"-v=2")
	kf.cmd.Stdout, kf.cmd.Stderr = logFile, logFile
	kf.cmd.Env = append(withoutProxies(os.Environ()), "NO_PROXY=127.0.0.1")
	if err := kf.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		_ = kf.cmd.Wait()
		logFile.Close()
		close(kf.done)
	}()
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-kf.done:
			log, _ := os.ReadFile(kf.log)
			b.Fatalf("KubeFed's controller-manager exited; its log ends with:\n%s", log[max(0, len(log)-4096):])
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(kf.metricsURL); err == nil {
			resp.Body.Close()
			return kf
		}
		if time.Now().After(deadline) {
			kf.stop(b)
			b.Fatal("KubeFed's controller-manager served no metrics within a minute")
		}
	}
}

// withoutProxies drops the proxy settings from env: KubeFed talks to
// 127.0.0.1 only.
func withoutProxies(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(name), "_proxy") {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// stop ends the controller-manager with SIGTERM, and SIGKILL after 10 s.
func (kf *kubefedProcess) stop(b *testing.B) {
	_ = kf.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-kf.done:
	case <-time.After(10 * time.Second):
		_ = kf.cmd.Process.Kill()
		<-kf.done
	}
	log, err := os.ReadFile(kf.log)
	if err != nil {
		b.Error(err)
		return
	}
	if n := bytes.Count(log, []byte("\nE")); n > 0 {
		logf("KubeFed's controller-manager logged %d errors (%s)", n, kf.log)
	}
}
