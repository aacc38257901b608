// Package kubeconfig loads a cluster's connection settings from a
// kubeconfig file the way kubectl does, and makes clients from them with
// the one scheme of package scheme: every command loads its host here. It
// also registers the flags that say which kubeconfig and context to use,
// and reads the namespace of a context.
package kubeconfig

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/scheme"
)

// Source says where a cluster's settings come from, and which flags said
// so, for error messages.
type Source struct {
	// Path of the kubeconfig file; empty means $KUBECONFIG, else
	// ~/.kube/config.
	Path string
	// Context to use; empty means the kubeconfig's current-context.
	Context string
	// PathFlag and ContextFlag are the flags that set Path and Context.
	PathFlag, ContextFlag string
}

// AddHostFlags registers in cmd the flags --host-kubeconfig and
// --host-context, which set src.
func AddHostFlags(cmd *cobra.Command, src *Source) {
	addFlags(cmd, src, "host", "the host cluster")
}

// AddClusterFlags registers in cmd the flags --cluster-kubeconfig and
// --cluster-context, which set src; cluster says which cluster they name in
// the help, as in "the cluster to join".
func AddClusterFlags(cmd *cobra.Command, src *Source, cluster string) {
	addFlags(cmd, src, "cluster", cluster)
}

// addFlags registers --PREFIX-kubeconfig and --PREFIX-context.
func addFlags(cmd *cobra.Command, src *Source, prefix, cluster string) {
	pathFlag, contextFlag := prefix+"-kubeconfig", prefix+"-context"
	f := cmd.Flags()
	f.StringVar(&src.Path, pathFlag, "", "kubeconfig of "+cluster+" (default $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&src.Context, contextFlag, "", "context of "+cluster+" (default the current context)")
	src.PathFlag, src.ContextFlag = "--"+pathFlag, "--"+contextFlag
}

// Cluster is one context of a kubeconfig, loaded.
type Cluster struct {
	// Config is the client configuration of the context.
	Config *rest.Config
	// Context is the name of the context used.
	Context string
	// File names the kubeconfig file(s) read.
	File string
	// Server is the cluster's server URL, as the kubeconfig writes it.
	Server string
	// CAData is the cluster's certificate-authority-data, or the content of
	// its certificate-authority file; empty when it has neither.
	CAData []byte
	// Insecure is the cluster's insecure-skip-tls-verify.
	Insecure bool
	// TLSServerName is the cluster's tls-server-name.
	TLSServerName string
}

// Load loads the context of src.
func Load(src Source) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = src.Path
	file := strings.Join(rules.GetLoadingPrecedence(), string(os.PathListSeparator))
	raw, err := rules.Load()
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s%s: %w", file, flagNote(src.Path, src.PathFlag), err)
	}
	name, err := contextName(raw, src, file)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, name, &clientcmd.ConfigOverrides{}, rules).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %q: %w", file, name, err)
	}
	c := &Cluster{Config: cfg, Context: name, File: file}
	if err := c.setServer(raw, raw.Contexts[name].Cluster); err != nil {
		return nil, err
	}
	return c, nil
}

// contextName returns the context src asks for, checking that raw has it.
func contextName(raw *clientcmdapi.Config, src Source, file string) (string, error) {
	if len(raw.Contexts) == 0 {
		return "", fmt.Errorf("no context in kubeconfig %s (is it missing?): pass %s, or set $KUBECONFIG", file, src.PathFlag)
	}
	name := src.Context
	if name == "" {
		name = raw.CurrentContext
	}
	if name == "" {
		return "", fmt.Errorf("kubeconfig %s has no current-context: pass %s (contexts: %s)", file, src.ContextFlag, contextNames(raw))
	}
	if _, ok := raw.Contexts[name]; !ok {
		return "", fmt.Errorf("context %q%s is not in kubeconfig %s (contexts: %s)", name, flagNote(src.Context, src.ContextFlag), file, contextNames(raw))
	}
	return name, nil
}

// setServer records the server URL and CA of the context's cluster.
func (c *Cluster) setServer(raw *clientcmdapi.Config, cluster string) error {
	info, ok := raw.Clusters[cluster]
	if !ok {
		return fmt.Errorf("kubeconfig %s, context %q: cluster %q is not in the kubeconfig", c.File, c.Context, cluster)
	}
	c.Server, c.Insecure, c.TLSServerName = info.Server, info.InsecureSkipTLSVerify, info.TLSServerName
	c.CAData = info.CertificateAuthorityData
	if len(c.CAData) == 0 && info.CertificateAuthority != "" {
		data, err := os.ReadFile(info.CertificateAuthority)
		if err != nil {
			return fmt.Errorf("kubeconfig %s, cluster %q: reading certificate-authority: %w", c.File, cluster, err)
		}
		c.CAData = data
	}
	return nil
}

// flagNote says which flag set value, if one did.
func flagNote(value, flag string) string {
	if value == "" || flag == "" {
		return ""
	}
	return " (" + flag + ")"
}

func contextNames(raw *clientcmdapi.Config) string {
	names := make([]string, 0, len(raw.Contexts))
	for name := range raw.Contexts {
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// clientScheme knows the Kubernetes kinds and Fedwarden's.
var clientScheme = scheme.New()

// Client makes the cluster's requests give up after timeout (in c.Config;
// 0 means never), then returns a client of it that knows the Kubernetes
// kinds and Fedwarden's. It does not contact the cluster.
func (c *Cluster) Client(timeout time.Duration) (client.Client, error) {
	c.Config.Timeout = timeout
	cl, err := client.New(c.Config, client.Options{Scheme: clientScheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for context %q: %w", c.Context, err)
	}
	return cl, nil
}

// Clients returns a client of the cluster, as Client does, and a discovery
// client, both giving up after timeout. It does not contact the cluster.
func (c *Cluster) Clients(timeout time.Duration) (client.Client, *discovery.DiscoveryClient, error) {
	cl, err := c.Client(timeout)
	if err != nil {
		return nil, nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("creating a discovery client for context %q: %w", c.Context, err)
	}
	return cl, disco, nil
}

// LoadConfig returns the client configuration of src as kubectl loads
// it: the kubeconfig src names, else $KUBECONFIG, else ~/.kube/config;
// when none is found, the pod's ServiceAccount (in-cluster), which Load
// never falls back to. Its error is clientcmd's: the caller says what it
// was loading.
func LoadConfig(src Source) (*rest.Config, error) {
	return deferred(src).ClientConfig()
}

// Namespace returns flag, when set, else the namespace of src's context,
// as kubectl takes it: default when the context sets none.
func Namespace(flag string, src Source) (string, error) {
	if flag != "" {
		return flag, nil
	}
	ns, _, err := deferred(src).Namespace()
	if err != nil {
		return "", fmt.Errorf("reading the namespace of the host's context: %w", err)
	}
	return ns, nil
}

// deferred returns src's client configuration, loaded when first asked.
func deferred(src Source) clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = src.Path
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: src.Context})
}
