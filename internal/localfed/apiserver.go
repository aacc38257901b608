package localfed

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Settings of every kube-apiserver.
const (
	serviceAccountIssuer = "https://kubernetes.default.svc"
	serviceClusterIPs    = "10.0.0.0/24"
)

// apiserverArgs are the flags of the cluster's kube-apiserver.
func (c *Cluster) apiserverArgs() []string {
	file := func(name string) string { return filepath.Join(c.dir, name) }
	return []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.port),
		"--cert-dir=" + c.dir,
		"--tls-cert-file=" + file(servingCrtFile),
		"--tls-private-key-file=" + file(servingKeyFile),
		"--client-ca-file=" + file(clientCAFile),
		"--authorization-mode=Node,RBAC",
		"--etcd-servers=" + c.env.etcdURL,
		"--etcd-prefix=/" + c.Name,
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + file(saPubFile),
		"--service-account-signing-key-file=" + file(saKeyFile),
		"--service-cluster-ip-range=" + serviceClusterIPs,
		"--allow-privileged=true",
		"--endpoint-reconciler-type=none",
	}
}

// launch starts the kube-apiserver on the cluster's port and waits until it
// is ready; on failure, nothing is left running.
func (c *Cluster) launch(ctx context.Context) error {
	log, err := c.env.logs.open(c.Name, filepath.Join(c.dir, "apiserver.log"))
	if err != nil {
		return err
	}
	p, err := startProcess("kube-apiserver "+c.Name, c.env.bins.apiserver, c.apiserverArgs(), log)
	if err != nil {
		return err
	}
	c.proc.Store(p)
	if err := waitReady(ctx, c.Config, p, c.env.startTimeout); err != nil {
		return errors.Join(err, p.kill())
	}
	return nil
}

// waitReady polls the apiserver's /readyz with cfg until it answers 200.
func waitReady(ctx context.Context, cfg *rest.Config, p *process, timeout time.Duration) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	return p.waitUntil(ctx, timeout, 100*time.Millisecond, "is not ready", func(ctx context.Context) error {
		return readyz(ctx, client)
	})
}

func readyz(ctx context.Context, client kubernetes.Interface) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}
