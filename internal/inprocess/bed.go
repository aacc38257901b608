package inprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/join"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/scheme"
)

// ControlPlaneNamespace is the control-plane namespace of the bed's host:
// the members' credential Secrets live there.
const ControlPlaneNamespace = corev1beta1.DefaultFederationNamespace

// joinControllers are the kube-controller-manager controllers `fedwarden
// join` needs in a member: they fill in its ServiceAccount's token.
var joinControllers = []string{"serviceaccount-controller", "serviceaccount-token-controller"}

// Bed is a local federation, with Fedwarden's controllers running in this
// process once StartManager is called.
type Bed struct {
	// Fed is the federation: its clusters' kubeconfigs, Kill and Restart.
	Fed *localfed.Federation
	// Host and Members are admin clients of the host and of each member (by
	// name), with Fedwarden's types and CustomResourceDefinitions.
	Host    client.Client
	Members map[string]client.Client

	name        string
	logPath     string
	stopManager context.CancelFunc
	managerDone chan error
}

// Start starts a federation with opts, creates the control-plane namespace,
// and sends the process's controller-runtime and klog logs to a file. name
// tells the bed's log directory and user agent apart from other packages'.
// Each cluster runs only the kube-controller-manager controllers joining
// needs, unless opts say otherwise.
func Start(ctx context.Context, name string, opts ...localfed.Option) (_ *Bed, err error) {
	logDir, err := os.MkdirTemp("", name+"-integration-")
	if err != nil {
		return nil, err
	}
	b := &Bed{name: name, logPath: filepath.Join(logDir, "controllers.log"), Members: map[string]client.Client{}}
	if err := b.captureLogs(); err != nil {
		return nil, errors.Join(err, os.RemoveAll(logDir))
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Stop(true))
		}
	}()
	opts = slices.Concat([]localfed.Option{localfed.WithControllers(joinControllers...)}, opts)
	if b.Fed, err = localfed.Start(ctx, opts...); err != nil {
		return nil, fmt.Errorf("starting the federation: %w", err)
	}
	if err := b.connect(); err != nil {
		return nil, err
	}
	if err := b.Host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ControlPlaneNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("creating namespace %s: %w", ControlPlaneNamespace, err)
	}
	return b, nil
}

// captureLogs sends the controller-runtime and klog logs to the bed's log
// file.
func (b *Bed) captureLogs() error {
	f, err := os.Create(b.logPath)
	if err != nil {
		return err
	}
	logger := zap.New(zap.WriteTo(f), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger.WithName("klog"))
	return nil
}

// connect makes the clients of the host and of the members.
func (b *Bed) connect() error {
	s := scheme.New()
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return fmt.Errorf("adding the CRD kinds to the scheme: %w", err)
	}
	var err error
	if b.Host, err = client.New(b.Fed.Host.Config, client.Options{Scheme: s}); err != nil {
		return err
	}
	for _, m := range b.Fed.Members {
		if b.Members[m.Name], err = client.New(m.Config, client.Options{Scheme: s}); err != nil {
			return err
		}
	}
	return nil
}

// Join joins every member with `fedwarden join`, all at the same time. Each
// join waits until the cluster health controller (see StartManager) marks
// its member Ready.
func (b *Bed) Join() error {
	errs := make([]error, len(b.Fed.Members))
	var wg sync.WaitGroup
	for i, m := range b.Fed.Members {
		wg.Go(func() {
			_, stderr, code := clitest.Execute(join.NewCommand, m.Name,
				"--host-kubeconfig", b.Fed.Host.Kubeconfig, "--cluster-kubeconfig", m.Kubeconfig, "--timeout", "2m")
			if code != 0 {
				errs[i] = fmt.Errorf("joining %s: exit code %d:\n%s", m.Name, code, stderr)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Namespace creates a namespace of the host for one test, named after
// prefix, and returns its name.
func (b *Bed) Namespace(t testing.TB, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := b.Host.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// Stop stops the manager and the federation. It fails when the
// controllers' log shows a connection refused outside loopback. The log is
// kept, and its path printed, when it fails or failed is set.
func (b *Bed) Stop(failed bool) error {
	var errs []error
	if b.stopManager != nil {
		b.stopManager()
		select {
		case err := <-b.managerDone:
			if err != nil {
				errs = append(errs, fmt.Errorf("the manager: %w", err))
			}
		case <-time.After(time.Minute):
			errs = append(errs, errors.New("the manager did not stop within a minute"))
		}
	}
	if b.Fed != nil {
		errs = append(errs, b.Fed.Stop())
	}
	if refused, err := refusals(b.logPath); err != nil || len(refused) > 0 {
		errs = append(errs, fmt.Errorf("a controller tried to reach a member outside loopback (%v):\n%s", err, strings.Join(refused, "\n")))
	}
	if err := errors.Join(errs...); err != nil || failed {
		fmt.Fprintf(os.Stderr, "the controllers' log is kept in %s\n", b.logPath)
		return err
	}
	return os.RemoveAll(filepath.Dir(b.logPath))
}
