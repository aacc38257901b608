package localfed

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig for cfg to path, with one cluster, user
// and context, all called name; the context is the current one.
func writeKubeconfig(path, name string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig of %s: %w", name, err)
	}
	return nil
}

// WriteServiceAccountKubeconfig writes to path a kubeconfig of c as the
// ServiceAccount namespace/name, with a token minted for it (TokenRequest)
// that is valid for lifetime: what a pod running as that ServiceAccount
// would use.
func (c *Cluster) WriteServiceAccountKubeconfig(ctx context.Context, namespace, name, path string, lifetime time.Duration) error {
	kube, err := c.Client()
	if err != nil {
		return err
	}
	seconds := int64(lifetime / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	tok, err := kube.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("minting a token of ServiceAccount %s/%s in %s: %w", namespace, name, c.Name, err)
	}
	cfg := &rest.Config{Host: c.Config.Host, BearerToken: tok.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: c.Config.CAData}}
	return writeKubeconfig(path, c.Name, cfg)
}
