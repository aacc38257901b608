package kyvernotest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

const (
	// Namespace is where Kyverno keeps its configuration, leases and
	// certificates, as the Helm chart installs it.
	Namespace = "kyverno"
	// caSecret and tlsSecret hold the admission controller's CA and serving
	// certificate, which it makes; the names are the chart's.
	caSecret  = "kyverno-svc.kyverno.svc.kyverno-tls-ca"
	tlsSecret = "kyverno-svc.kyverno.svc.kyverno-tls-pair"
	// stopGrace is how long a controller gets to end after SIGTERM.
	stopGrace = 10 * time.Second
)

// crdDirs are the directories of Kyverno's module whose CRDs the
// controllers need: policies, update requests, ephemeral and policy reports.
var crdDirs = []string{"config/crds/kyverno", "config/crds/policies.kyverno.io", "config/crds/policyreport", "config/crds/reports"}

// Kyverno is a running set of Kyverno controllers.
type Kyverno struct {
	procs []*process
}

// Start installs Kyverno's CRDs, and the ServiceAccounts, RBAC and
// ConfigMaps of its Helm chart, in the cluster whose admin credentials cfg
// holds, and starts the admission, background and reports controllers
// against it, each as its chart ServiceAccount (a token in a kubeconfig),
// logging to files in dir. RBAC that policies need (deploy/kyverno/rbac.yaml)
// is best created before, so that its aggregation is in place. The admission
// controller listens on 127.0.0.1:443: Start fails at once, saying so, when
// this process may not bind it (not root, no CAP_NET_BIND_SERVICE) or
// another program holds it.
func Start(ctx context.Context, cfg *rest.Config, dir string) (*Kyverno, error) {
	bins := map[string]string{}
	for _, name := range []string{Admission, Background, Reports} {
		bin, err := Binary(name)
		if err != nil {
			return nil, err
		}
		bins[name] = bin
	}
	if err := checkWebhookPort(net.Listen); err != nil {
		return nil, err
	}
	moduleDir, err := ModuleDir()
	if err != nil {
		return nil, err
	}
	if err := installCRDs(ctx, cfg, moduleDir); err != nil {
		return nil, err
	}
	if err := installChart(ctx, cfg, moduleDir, dir); err != nil {
		return nil, err
	}
	k := &Kyverno{}
	for _, c := range controllers() {
		kubeconfig, err := serviceAccountKubeconfig(ctx, cfg, c.deployment, dir)
		if err != nil {
			return nil, errors.Join(err, k.Stop())
		}
		p, err := startProcess(c.name, bins[c.binary], dir, c.env(), c.args(kubeconfig))
		if err != nil {
			return nil, errors.Join(err, k.Stop())
		}
		k.procs = append(k.procs, p)
	}
	if err := k.waitServing(ctx, cfg); err != nil {
		return nil, errors.Join(err, k.Stop())
	}
	return k, nil
}

// installChart creates Kyverno's namespace and the chart's ServiceAccounts,
// RBAC and ConfigMaps.
func installChart(ctx context.Context, cfg *rest.Config, moduleDir, dir string) error {
	objs, err := chartObjects(moduleDir, dir)
	if err != nil {
		return err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	c, err := NewCluster(cfg)
	if err != nil {
		return err
	}
	for _, obj := range objs {
		r, err := c.Resource(obj)
		if err != nil {
			return err
		}
		if _, err := r.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s of Kyverno's chart: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// controller is how one Kyverno controller is run: its Deployment in the
// chart names it and its ServiceAccount.
type controller struct {
	name, binary, deployment string
	flags                    []string
}

// controllers are the three controllers, with the flags the chart gives
// them and those that running out of cluster needs.
func controllers() []controller {
	return []controller{
		{name: "admission-controller", binary: Admission, deployment: "kyverno-admission-controller", flags: []string{
			"--controllerRuntimeMetricsAddress", "0",
			"--serverIP", "127.0.0.1",
			// In serverIP mode the webhook URLs carry no port: 443 (webhookAddr).
			"--webhookServerPort", "443",
			"--caSecretName", caSecret,
			"--tlsSecretName", tlsSecret,
			"--backgroundServiceAccountName", "system:serviceaccount:" + Namespace + ":kyverno-background-controller",
			"--reportsServiceAccountName", "system:serviceaccount:" + Namespace + ":kyverno-reports-controller",
		}},
		{name: "background-controller", binary: Background, deployment: "kyverno-background-controller", flags: []string{"--controllerRuntimeMetricsAddress", "0"}},
		{name: "reports-controller", binary: Reports, deployment: "kyverno-reports-controller"},
	}
}

// args are the controller's flags, with kubeconfig and its metrics on
// 127.0.0.1, port 0: the kernel picks a free port as the controller binds
// it, so no other program can take it in between (a port chosen before and
// handed over could be, and Kyverno exits when it cannot bind its metrics
// port). Nothing reads Kyverno's metrics here. (The admission and background
// controllers also get controller-runtime's metrics off, which would
// otherwise both bind :8080.)
func (c controller) args(kubeconfig string) []string {
	return append([]string{
		"--kubeconfig", kubeconfig,
		"--metricsHost", "127.0.0.1",
		"--metricsPort", "0",
		"--disableLogColor",
	}, c.flags...)
}

// env is what the controller's Deployment in the chart puts in the
// environment.
func (c controller) env() []string {
	return []string{
		"KYVERNO_NAMESPACE=" + Namespace,
		"KYVERNO_SERVICEACCOUNT_NAME=" + c.deployment,
		"KYVERNO_DEPLOYMENT=" + c.deployment,
		"KYVERNO_POD_NAME=" + c.deployment + "-0",
		"INIT_CONFIG=kyverno",
		"METRICS_CONFIG=kyverno-metrics",
	}
}

// waitServing waits until the admission controller has made its serving
// certificate: before, the API server's calls to its webhooks fail.
func (k *Kyverno) waitServing(ctx context.Context, cfg *rest.Config) error {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited := k.Exited(); len(exited) > 0 {
			return false, fmt.Errorf("%v exited", exited)
		}
		_, err := kc.CoreV1().Secrets(Namespace).Get(ctx, tlsSecret, metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for Kyverno's serving certificate: %w\n%s", err, k.Logs())
	}
	return nil
}

// Stop ends the controllers.
func (k *Kyverno) Stop() error {
	return stopAll(k.procs, stopGrace)
}

// Exited names the controllers that have ended, which they should not
// while the test runs.
func (k *Kyverno) Exited() []string {
	var names []string
	for _, p := range k.procs {
		if p.exited() {
			names = append(names, p.name)
		}
	}
	return names
}

// Logs returns the last lines of every controller's log, for a failure.
func (k *Kyverno) Logs() string {
	var b strings.Builder
	if exited := k.Exited(); len(exited) > 0 {
		fmt.Fprintf(&b, "Kyverno controllers that exited: %v\n", exited)
	}
	for _, p := range k.procs {
		fmt.Fprintf(&b, "--- last lines of %s (%s) ---\n%s\n", p.name, p.logPath, tail(p.logPath, 16<<10))
	}
	return b.String()
}

// installCRDs creates Kyverno's CRDs from its module and waits until they
// are served.
func installCRDs(ctx context.Context, cfg *rest.Config, moduleDir string) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("installing Kyverno's CRDs: %w", err)
	}
	var names []string
	for _, d := range crdDirs {
		err := filepath.WalkDir(filepath.Join(moduleDir, d), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".yaml") {
				return err
			}
			name, err := createCRD(ctx, client, path)
			names = append(names, name)
			return err
		})
		if err != nil {
			return fmt.Errorf("installing Kyverno's CRDs: %w", err)
		}
	}
	return waitEstablished(ctx, client, names)
}

func createCRD(ctx context.Context, client apiextensionsclient.Interface, path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	_, err = client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	return crd.Name, nil
}

func waitEstablished(ctx context.Context, client apiextensionsclient.Interface, names []string) error {
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
		}
	}
	return nil
}
