package kyvernotest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// chartKinds are the kinds of Kyverno's Helm chart that the controllers
// need beside themselves: their identities, RBAC and configuration.
var chartKinds = map[string]bool{"ServiceAccount": true, "ClusterRole": true, "ClusterRoleBinding": true, "Role": true, "RoleBinding": true, "ConfigMap": true}

// chartObjects renders Kyverno's Helm chart from its module with bin/helm
// (its CRDs left out, they come from config/crds) and returns the objects
// of chartKinds. The chart's remote dependencies (CRD and report-server
// subcharts, all disabled by default) are dropped from a copy in dir, so
// that it renders offline.
func chartObjects(moduleDir, dir string) (Manifests, error) {
	helm, err := Binary("helm")
	if err != nil {
		return nil, err
	}
	chart := filepath.Join(dir, "kyverno-chart")
	if err := copyDir(filepath.Join(moduleDir, "charts", "kyverno"), chart); err != nil {
		return nil, fmt.Errorf("copying Kyverno's chart: %w", err)
	}
	if err := dropRemoteDependencies(chart); err != nil {
		return nil, err
	}
	out, err := exec.Command(helm, "template", "kyverno", chart, "--namespace", Namespace, "--set", "crds.install=false").Output()
	if err != nil {
		return nil, fmt.Errorf("rendering Kyverno's chart: %w", err)
	}
	rendered := filepath.Join(dir, "kyverno-chart.yaml")
	if err := os.WriteFile(rendered, out, 0o644); err != nil {
		return nil, err
	}
	all, err := Read(rendered)
	if err != nil {
		return nil, err
	}
	var objs Manifests
	for _, obj := range all {
		if chartKinds[obj.GetKind()] {
			objs = append(objs, obj)
		}
	}
	return objs, nil
}

// dropRemoteDependencies removes from Chart.yaml the dependencies that
// have a repository (the local subcharts stay), and Chart.lock.
func dropRemoteDependencies(chart string) error {
	path := filepath.Join(chart, "Chart.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var kept []string
	var dep []string
	flush := func() {
		if !strings.Contains(strings.Join(dep, "\n"), "repository:") {
			kept = append(kept, dep...)
		}
		dep = nil
	}
	inDeps := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case line == "dependencies:":
			inDeps = true
			kept = append(kept, line)
		case inDeps && strings.HasPrefix(line, "  - "):
			flush()
			dep = []string{line}
		case inDeps && strings.HasPrefix(line, "    "):
			dep = append(dep, line)
		default:
			if inDeps {
				flush()
			}
			inDeps = false
			kept = append(kept, line)
		}
	}
	flush()
	if err := os.Remove(filepath.Join(chart, "Chart.lock")); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o644)
}

func copyDir(from, to string) error {
	return filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		target := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

// serviceAccountKubeconfig writes a kubeconfig in dir that authenticates
// as ServiceAccount name of Kyverno's namespace, with a token from the
// TokenRequest API, and verifies the server with the CA of cfg.
func serviceAccountKubeconfig(ctx context.Context, cfg *rest.Config, name, dir string) (string, error) {
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	expiry := int64(24 * 3600)
	tr, err := kc.CoreV1().ServiceAccounts(Namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s: %w", name, err)
	}
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["host"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kubeconfig.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kubeconfig.Contexts[name] = &clientcmdapi.Context{Cluster: "host", AuthInfo: name}
	kubeconfig.CurrentContext = name
	path := filepath.Join(dir, name+".kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return "", err
	}
	return path, nil
}
