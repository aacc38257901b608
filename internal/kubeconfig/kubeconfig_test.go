package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

var testCA = []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")

// writeKubeconfig writes a kubeconfig in dir with the contexts a (current,
// CA data), b (CA file, relative to the kubeconfig) and c (insecure), and
// returns its path.
func writeKubeconfig(t *testing.T, dir, current string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "ca.pem"), testCA, 0o600); err != nil {
		t.Fatal(err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["a"] = &clientcmdapi.Cluster{Server: "https://a.example:6443", CertificateAuthorityData: testCA}
	kc.Clusters["b"] = &clientcmdapi.Cluster{Server: "https://b.example:6443", CertificateAuthority: "ca.pem"}
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://c.example:6443", InsecureSkipTLSVerify: true}
	for _, name := range []string{"a", "b", "c"} {
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: "t"}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	kc.CurrentContext = current
	path := filepath.Join(dir, "config")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := writeKubeconfig(t, dir, "a")
	noCurrent := writeKubeconfig(t, t.TempDir(), "")
	tests := []struct {
		name       string
		src        Source
		env        string // $KUBECONFIG
		wantServer string
		wantCA     bool
		insecure   bool
		wantErr    string
	}{
		{name: "current context", src: Source{Path: path}, wantServer: "https://a.example:6443", wantCA: true},
		{name: "named context, CA file", src: Source{Path: path, Context: "b"}, wantServer: "https://b.example:6443", wantCA: true},
		{name: "insecure", src: Source{Path: path, Context: "c"}, wantServer: "https://c.example:6443", insecure: true},
		{name: "$KUBECONFIG", env: path, src: Source{Context: "b"}, wantServer: "https://b.example:6443", wantCA: true},
		{name: "flag wins over $KUBECONFIG", env: filepath.Join(dir, "none"), src: Source{Path: path}, wantServer: "https://a.example:6443", wantCA: true},
		{name: "missing file", src: Source{Path: filepath.Join(dir, "none"), PathFlag: "--cluster-kubeconfig"},
			wantErr: "none (--cluster-kubeconfig)"},
		{name: "no kubeconfig anywhere", env: filepath.Join(dir, "none"), src: Source{PathFlag: "--cluster-kubeconfig"},
			wantErr: "no context in kubeconfig " + filepath.Join(dir, "none") + " (is it missing?): pass --cluster-kubeconfig"},
		{name: "unknown context", src: Source{Path: path, Context: "z", ContextFlag: "--host-context"},
			wantErr: `context "z" (--host-context) is not in kubeconfig ` + path + " (contexts: a, b, c)"},
		{name: "no current context", src: Source{Path: noCurrent, ContextFlag: "--host-context"},
			wantErr: "has no current-context: pass --host-context (contexts: a, b, c)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { // not parallel: t.Setenv
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, tt.env)
			c, err := Load(tt.src)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if c.Server != tt.wantServer || c.Config.Host != tt.wantServer || c.Insecure != tt.insecure {
				t.Errorf("server %s (config %s), insecure %v", c.Server, c.Config.Host, c.Insecure)
			}
			if got := string(c.CAData) == string(testCA); got != tt.wantCA {
				t.Errorf("CA data %q", c.CAData)
			}
		})
	}
}

func TestAddFlags(t *testing.T) {
	t.Parallel()
	var host, member Source
	cmd := &cobra.Command{Use: "join"}
	AddHostFlags(cmd, &host)
	AddClusterFlags(cmd, &member, "the cluster to join")
	if err := cmd.ParseFlags([]string{"--host-kubeconfig", "h.yaml", "--host-context", "hc", "--cluster-kubeconfig", "m.yaml", "--cluster-context", "mc"}); err != nil {
		t.Fatal(err)
	}
	if want := (Source{Path: "h.yaml", Context: "hc", PathFlag: "--host-kubeconfig", ContextFlag: "--host-context"}); host != want {
		t.Errorf("host %+v, want %+v", host, want)
	}
	if want := (Source{Path: "m.yaml", Context: "mc", PathFlag: "--cluster-kubeconfig", ContextFlag: "--cluster-context"}); member != want {
		t.Errorf("member %+v, want %+v", member, want)
	}
	for flag, want := range map[string]string{
		"host-kubeconfig":    "kubeconfig of the host cluster (default $KUBECONFIG, else ~/.kube/config)",
		"host-context":       "context of the host cluster (default the current context)",
		"cluster-kubeconfig": "kubeconfig of the cluster to join (default $KUBECONFIG, else ~/.kube/config)",
		"cluster-context":    "context of the cluster to join (default the current context)",
	} {
		if got := cmd.Flags().Lookup(flag).Usage; got != want {
			t.Errorf("--%s: help %q, want %q", flag, got, want)
		}
	}
}

// Namespace is the flag when set, else the context's namespace, else
// default, as kubectl takes it.
func TestNamespace(t *testing.T) {
	t.Parallel()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["host"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host"}
	kc.Contexts["team"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host", Namespace: "team-a"}
	kc.CurrentContext = "host"
	path := filepath.Join(t.TempDir(), "config")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ flag, context, want string }{
		{"", "", "default"}, {"", "host", "default"}, {"", "team", "team-a"}, {"web", "team", "web"},
	}
	for _, tt := range tests {
		got, err := Namespace(tt.flag, Source{Path: path, Context: tt.context})
		if err != nil || got != tt.want {
			t.Errorf("flag %q, context %q: namespace %q, %v; want %q", tt.flag, tt.context, got, err, tt.want)
		}
	}
}

// LoadConfig reads the context src names, as kubectl does.
func TestLoadConfig(t *testing.T) {
	t.Parallel()
	path := writeKubeconfig(t, t.TempDir(), "a")
	for context, want := range map[string]string{"": "https://a.example:6443", "b": "https://b.example:6443"} {
		cfg, err := LoadConfig(Source{Path: path, Context: context})
		if err != nil {
			t.Errorf("context %q: %v", context, err)
		} else if cfg.Host != want {
			t.Errorf("context %q: host %s, want %s", context, cfg.Host, want)
		}
	}
	if _, err := LoadConfig(Source{Path: path, Context: "nope"}); err == nil {
		t.Error("a missing context loaded")
	}
}
