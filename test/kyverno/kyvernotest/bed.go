package kyvernotest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// Bed is a host with joined members, Fedwarden's controller-manager with
// remediation Alert by default (so that only Kyverno heals what is not
// told otherwise), Deployments enabled, and Kyverno's controllers running
// as their chart's ServiceAccounts with deploy/kyverno/rbac.yaml added.
type Bed struct {
	Fed     *localfed.Federation
	CM      *fedtest.ControllerManager
	Kyverno *Kyverno
	// Host creates and deletes objects in the host.
	Host *Cluster
	// Clusters are the names the members joined as.
	Clusters []string
}

// DeployDir is deploy/kyverno, where the policies and their RBAC are.
func DeployDir() (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "kyverno"), nil
}

// StartBed starts a bed with members members, its logs in dir. On error,
// what was started is stopped. It needs 127.0.0.1:443, for the admission
// controller's webhooks: root or CAP_NET_BIND_SERVICE, and no other bed on
// the machine; that and the binaries are checked before anything starts.
func StartBed(ctx context.Context, dir string, members int) (*Bed, error) {
	for _, name := range []string{Admission, Background, Reports, "helm"} {
		if _, err := Binary(name); err != nil {
			return nil, err
		}
	}
	if err := checkWebhookPort(net.Listen); err != nil {
		return nil, err
	}
	bin, err := fedtest.Build(dir)
	if err != nil {
		return nil, err
	}
	// The members run no deployment controller: a member Deployment
	// changes only when someone writes it. The host aggregates ClusterRoles,
	// for Kyverno's RBAC.
	f, err := localfed.Start(ctx, localfed.WithMembers(members), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller", "clusterrole-aggregation-controller"))
	if err != nil {
		return nil, fmt.Errorf("starting the local federation: %w", err)
	}
	b := &Bed{Fed: f}
	if err := b.start(ctx, bin, dir); err != nil {
		return nil, errors.Join(err, b.Stop())
	}
	return b, nil
}

func (b *Bed) start(ctx context.Context, bin, dir string) error {
	var err error
	if b.Host, err = NewCluster(b.Fed.Host.Config); err != nil {
		return err
	}
	b.CM, err = fedtest.StartControllerManager(bin, b.Fed, dir, fedtest.Settings{
		ProbePeriod: 10 * time.Second, ProbeTimeout: 3 * time.Second, FailureThreshold: 3,
		Args: []string{"--default-remediation", "Alert"},
	})
	if err != nil {
		return err
	}
	for _, m := range b.Fed.Members {
		r, err := fedtest.Run(ctx, bin, fedtest.JoinArgs(b.Fed, m, m.Name)...)
		if err != nil || r.Code != 0 {
			return fmt.Errorf("joining %s: %v\n%s", m.Name, err, r)
		}
		b.Clusters = append(b.Clusters, m.Name)
	}
	if err := b.enableDeployments(ctx); err != nil {
		return err
	}
	deploy, err := DeployDir()
	if err != nil {
		return err
	}
	rbac, err := Read(filepath.Join(deploy, "rbac.yaml"))
	if err != nil {
		return err
	}
	if err := b.Host.Create(ctx, rbac); err != nil {
		return err
	}
	b.Kyverno, err = Start(ctx, b.Fed.Host.Config, dir)
	return err
}

// enableDeployments creates the FederatedTypeConfig of Deployments and
// waits until its propagation controller runs.
func (b *Bed) enableDeployments(ctx context.Context) error {
	ftc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "core.kubefed.io/v1beta1", "kind": "FederatedTypeConfig",
		"metadata": map[string]any{"name": "deployments.apps"},
		"spec": map[string]any{
			"targetType":    map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "pluralName": "deployments", "scope": "Namespaced"},
			"federatedType": map[string]any{"group": "types.kubefed.io", "version": "v1beta1", "kind": "FederatedDeployment", "pluralName": "federateddeployments", "scope": "Namespaced"},
			"propagation":   "Enabled",
		},
	}}
	if err := b.Host.Create(ctx, Manifests{ftc}); err != nil {
		return err
	}
	r, err := b.Host.Resource(ftc)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := r.Get(ctx, ftc.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		s, _, _ := unstructured.NestedString(got.Object, "status", "propagationController")
		return s == "Running", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for deployments.apps to run: %w", err)
	}
	return nil
}

// Stop stops Kyverno, the controller-manager and the federation.
func (b *Bed) Stop() error {
	var errs []error
	if b.Kyverno != nil {
		errs = append(errs, b.Kyverno.Stop())
	}
	if b.CM != nil {
		errs = append(errs, b.CM.Stop())
	}
	if b.Fed != nil {
		errs = append(errs, b.Fed.Stop())
	}
	return errors.Join(errs...)
}

// Logs returns the last lines of the controller-manager's and Kyverno's
// logs, for a failure.
func (b *Bed) Logs() string {
	var s strings.Builder
	if b.CM != nil {
		fmt.Fprintf(&s, "--- last lines of the controller-manager (%s) ---\n%s\n", b.CM.LogPath, tail(b.CM.LogPath, 16<<10))
	}
	if b.Kyverno != nil {
		s.WriteString(b.Kyverno.Logs())
	}
	return s.String()
}
