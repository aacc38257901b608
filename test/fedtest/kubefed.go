package fedtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// KubeFedNamespace is where KubeFed keeps its configuration, clusters and
// their Secrets on the host.
const KubeFedNamespace = "kube-federation-system"

// KubeFedConfig is the KubeFedConfig that KubeFed v0.10.0's Helm chart
// installs with its default values
// (charts/kubefed/charts/controllermanager/templates/kubefedconfig.yaml),
// but with 4 sync workers: KubeFed has no flag for them.
const KubeFedConfig = `apiVersion: core.kubefed.io/v1beta1
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
    maxConcurrentReconciles: 4
    adoptResources: Enabled
  statusController:
    maxConcurrentReconciles: 1
  featureGates:
  - name: PushReconciler
    configuration: Enabled
  - name: SchedulerPreferences
    configuration: Enabled
`

// KubeFedSetup installs KubeFed v0.10.0 on a localfed host started
// WithoutCRDs: its CRDs (bin/kubefed-crds.yaml), the KubeFedConfig,
// the FederatedTypeConfigs of kinds (`kubefedctl enable`, as resource or
// resource.group), and a KubeFedCluster per member, named after it, whose
// Secret holds a token of a cluster-admin ServiceAccount of the member,
// as `kubefedctl join` would make. It returns each member's token, for
// tests that check that no token leaks.
func KubeFedSetup(ctx context.Context, binDir string, f *localfed.Federation, kinds ...string) (map[string]string, error) {
	host := f.Host.Kubeconfig
	kubectl := filepath.Join(binDir, "kubectl")
	steps := [][]string{
		{kubectl, "--kubeconfig", host, "apply", "--server-side", "-f", filepath.Join(binDir, "kubefed-crds.yaml")},
		{kubectl, "--kubeconfig", host, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"},
		{kubectl, "--kubeconfig", host, "create", "namespace", KubeFedNamespace},
		{kubectl, "--kubeconfig", host, "apply", "-f", "-"},
	}
	for i, s := range steps {
		stdin := ""
		if i == len(steps)-1 {
			stdin = KubeFedConfig
		}
		if err := runTool(ctx, stdin, s...); err != nil {
			return nil, err
		}
	}
	for _, kind := range kinds {
		if err := runTool(ctx, "", filepath.Join(binDir, "kubefedctl"), "enable", kind, "--kubeconfig", host, "--kubefed-namespace", KubeFedNamespace); err != nil {
			return nil, err
		}
	}
	if err := runTool(ctx, "", kubectl, "--kubeconfig", host, "wait", "--for", "condition=Established", "--timeout", "60s", "crd", "--all"); err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	for _, m := range f.Members {
		token, err := AddKubeFedCluster(ctx, f, m)
		if err != nil {
			return nil, err
		}
		tokens[m.Name] = token
	}
	return tokens, nil
}

// runTool runs a command line, with stdin, and fails with its output.
func runTool(ctx context.Context, stdin string, args ...string) error {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(withoutProxies(os.Environ()), "KUBECONFIG=/nonexistent")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", filepath.Base(args[0]), strings.Join(args[1:], " "), err, out)
	}
	return nil
}

// AddKubeFedCluster gives KubeFed member m as `kubefedctl join` would: a
// cluster-admin ServiceAccount there, its token in a Secret on the host,
// and a KubeFedCluster pointing at the member's loopback endpoint. It
// returns the token.
func AddKubeFedCluster(ctx context.Context, f *localfed.Federation, m *localfed.Cluster) (string, error) {
	mc, err := kubernetes.NewForConfig(m.Config)
	if err != nil {
		return "", err
	}
	const sa = "kubefed-test"
	if _, err := mc.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "kube-system"}},
	}
	if _, err := mc.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", err
	}
	day := int64(24 * 60 * 60)
	tr, err := mc.CoreV1().ServiceAccounts("kube-system").CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &day}}, metav1.CreateOptions{})
	if err != nil {
		return "", err
	}
	hc, err := kubernetes.NewForConfig(f.Host.Config)
	if err != nil {
		return "", err
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name + "-token", Namespace: KubeFedNamespace},
		Data:       map[string][]byte{"token": []byte(tr.Status.Token), "ca.crt": m.CAData},
	}
	if _, err := hc.CoreV1().Secrets(KubeFedNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	dyn, err := dynamic.NewForConfig(f.Host.Config)
	if err != nil {
		return "", err
	}
	cluster := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.kubefed.io/v1beta1", "kind": "KubeFedCluster",
		"metadata": map[string]any{"name": m.Name, "namespace": KubeFedNamespace},
		"spec": map[string]any{
			"apiEndpoint": m.Endpoint,
			"caBundle":    base64.StdEncoding.EncodeToString(m.CAData),
			"secretRef":   map[string]any{"name": secret.Name},
		},
	}}
	if _, err := dyn.Resource(KubeFedClusters).Namespace(KubeFedNamespace).Create(ctx, cluster, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	return tr.Status.Token, nil
}

// KubeFedClusters is the resource of KubeFed's clusters.
var KubeFedClusters = schema.GroupVersionResource{Group: "core.kubefed.io", Version: "v1beta1", Resource: "kubefedclusters"}

// WaitKubeFedClustersReady waits up to timeout until every KubeFedCluster
// of f's host is Ready.
func WaitKubeFedClustersReady(ctx context.Context, f *localfed.Federation, timeout time.Duration) error {
	dyn, err := dynamic.NewForConfig(f.Host.Config)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		list, err := dyn.Resource(KubeFedClusters).Namespace(KubeFedNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for _, c := range list.Items {
			conds, _, _ := unstructured.NestedSlice(c.Object, "status", "conditions")
			for _, cond := range conds {
				if m, _ := cond.(map[string]any); m["type"] == "Ready" && m["status"] == "True" {
					ready++
				}
			}
		}
		if ready == len(list.Items) && ready > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d KubeFedClusters Ready after %s", ready, len(list.Items), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// KubeFed is KubeFed's controller-manager, running as a process.
type KubeFed struct {
	cmd        *exec.Cmd
	done       chan struct{}
	MetricsURL string
	LogPath    string
}

// StartKubeFed runs bin/kubefed-controller-manager against the host of
// kubeconfig, with its metrics and health endpoints on 127.0.0.1, logging
// to a file in dir, and waits until it serves its metrics.
func StartKubeFed(binDir, kubeconfig, dir string) (*KubeFed, error) {
	metricsPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	kf := &KubeFed{done: make(chan struct{}), MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		LogPath: filepath.Join(dir, fmt.Sprintf("kubefed-controller-manager-%d.log", metricsPort))}
	logFile, err := os.Create(kf.LogPath)
	if err != nil {
		return nil, err
	}
	kf.cmd = exec.Command(filepath.Join(binDir, "kubefed-controller-manager"),
		"--kubeconfig", kubeconfig,
		"--kubefed-namespace", KubeFedNamespace,
		"--metrics-addr", "127.0.0.1:"+strconv.Itoa(metricsPort),
		"--healthz-addr", "127.0.0.1:"+strconv.Itoa(healthPort),
		"-v=2")
	kf.cmd.Stdout, kf.cmd.Stderr = logFile, logFile
	kf.cmd.Env = append(withoutProxies(os.Environ()), "NO_PROXY=127.0.0.1")
	if err := kf.cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting KubeFed's controller-manager: %w", err)
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
			log, _ := os.ReadFile(kf.LogPath)
			return nil, fmt.Errorf("KubeFed's controller-manager exited; its log ends with:\n%s", log[max(0, len(log)-4096):])
		case <-time.After(100 * time.Millisecond):
		}
		if resp, err := http.Get(kf.MetricsURL); err == nil {
			resp.Body.Close()
			return kf, nil
		}
		if time.Now().After(deadline) {
			kf.Stop()
			return nil, errors.New("KubeFed's controller-manager served no metrics within a minute")
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

// Stop ends the controller-manager with SIGTERM, and SIGKILL after 10 s,
// and returns how many error lines it logged.
func (kf *KubeFed) Stop() int {
	_ = kf.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-kf.done:
	case <-time.After(10 * time.Second):
		_ = kf.cmd.Process.Kill()
		<-kf.done
	}
	log, _ := os.ReadFile(kf.LogPath)
	return bytes.Count(log, []byte("\nE"))
}

// PID is the controller-manager's process ID.
func (kf *KubeFed) PID() int { return kf.cmd.Process.Pid }
