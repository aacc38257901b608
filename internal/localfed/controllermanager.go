package localfed

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// DefaultControllers are the kube-controller-manager controllers every
// cluster runs unless WithControllers says otherwise: those that make a bare
// API server behave like a cluster for the objects Fedwarden writes.
// Namespaces finish deleting, owner references are garbage collected,
// ServiceAccounts and their long-lived token Secrets get filled in,
// Deployments get ReplicaSets and status, and ResourceQuotas their usage.
var DefaultControllers = []string{
	"namespace-controller",
	"garbage-collector-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
	"deployment-controller",
	"replicaset-controller",
	"resourcequota-controller",
}

// readinessController is the controller whose work shows that
// kube-controller-manager runs: it creates the default ServiceAccount.
const readinessController = "serviceaccount-controller"

// controllerManagerUser is the identity the bootstrap RBAC policy of
// kube-apiserver grants what kube-controller-manager needs; each controller
// then works with its own ServiceAccount's rights.
const controllerManagerUser = "system:kube-controller-manager"

// controllerManagerArgs are the flags of the cluster's kube-controller-manager.
func (c *Cluster) controllerManagerArgs() []string {
	file := func(name string) string { return filepath.Join(c.dir, name) }
	return []string{
		"--kubeconfig=" + file(controllerManagerKubeconfig),
		"--controllers=" + strings.Join(c.env.controllers, ","),
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + file(saKeyFile),
		"--root-ca-file=" + file(servingCAFile),
		"--leader-elect=false",
		"--secure-port=0",
		"--controller-start-interval=0",
	}
}

// controllerManagerKubeconfig is the kubeconfig file of kube-controller-manager.
const controllerManagerKubeconfig = "controller-manager.kubeconfig"

// writeControllerManagerKubeconfig writes the credentials of the cluster's
// kube-controller-manager; the endpoint must be known.
func (c *Cluster) writeControllerManagerKubeconfig() error {
	cfg, err := c.ConfigForUser(controllerManagerUser)
	if err != nil {
		return err
	}
	return writeKubeconfig(filepath.Join(c.dir, controllerManagerKubeconfig), c.Name, cfg)
}

// startControllerManager starts the cluster's kube-controller-manager, unless
// no controller is wanted or it already runs, and waits until it works: until
// the ServiceAccount controller has created the default ServiceAccount.
func (c *Cluster) startControllerManager(ctx context.Context) error {
	if len(c.env.controllers) == 0 || (c.cm != nil && !c.cm.exited()) {
		return nil
	}
	if err := c.writeControllerManagerKubeconfig(); err != nil {
		return err
	}
	log, err := c.env.logs.open(c.Name+"-controller-manager", filepath.Join(c.dir, "controller-manager.log"))
	if err != nil {
		return err
	}
	p, err := startProcess("kube-controller-manager "+c.Name, c.env.bins.controllerManager, c.controllerManagerArgs(), log)
	if err != nil {
		return err
	}
	c.cm = p
	if err := c.waitDefaultServiceAccount(ctx, p); err != nil {
		return errors.Join(err, p.kill())
	}
	return nil
}

func (c *Cluster) waitDefaultServiceAccount(ctx context.Context, p *process) error {
	client, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return fmt.Errorf("creating client of %s: %w", c.Name, err)
	}
	return p.waitUntil(ctx, c.env.startTimeout, 100*time.Millisecond, "did not create the default ServiceAccount", func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err
	})
}
