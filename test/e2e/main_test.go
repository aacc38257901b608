package e2e

import (
	"context"
	"flag"
	"fmt"
	"github.com/go-logr/logr"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

// resyncPeriod is the shared test bed's --resync-period.
const resyncPeriod = 5 * time.Second

// fed is the test bed shared by the tests of this package: a host and two
// members, and cm, a controller-manager working on it. Tests that stop or
// restart a cluster start a test bed of their own.
var (
	fed *localfed.Federation
	cm  *controllerManager
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	// The test's own clients log through controller-runtime; the
	// controller-manager's logs are in its own file.
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() {
		fmt.Println("skipping end-to-end tests in -short mode")
		return 0
	}
	dir, err := os.MkdirTemp("", "fedwarden-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a work directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if fedwardenBin, err = buildFedwarden(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fed, err = localfed.Start(context.Background(), localfed.WithMembers(2))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local federation: %v\n", err)
		return 1
	}
	defer func() {
		if err := fed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local federation: %v\n", err)
		}
	}()
	// A short resync period, so that the steady-state tests see periodic
	// resyncs (which must write nothing).
	if cm, err = startControllerManager(fed, dir, "--resync-period", resyncPeriod.String()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if err := cm.stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	if code != 0 {
		dumpLog(cm.logPath)
	}
	return code
}

// dumpLog copies the tail of a log to stderr, for a failed run.
func dumpLog(path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	const tail = 64 << 10
	if len(data) > tail {
		data = data[len(data)-tail:]
	}
	fmt.Fprintf(os.Stderr, "--- last lines of %s ---\n%s\n", filepath.Base(path), data)
}

// hostClient returns a client of the host cluster that reads and writes
// unstructured objects of any kind the host serves.
func hostClient(t *testing.T) client.Client {
	t.Helper()
	return newClient(t, fed.Host.Config)
}

// newClient returns a client for cfg that knows the core Kubernetes types,
// CRDs and the core.kubefed.io types, and any other kind as unstructured.
func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := corev1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := typesv1beta1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client of %s: %v", cfg.Host, err)
	}
	return c
}

func discoveryClient(t *testing.T) *discovery.DiscoveryClient {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(fed.Host.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dc
}

// testNamespace creates a namespace of the host for one test and deletes it
// when the test ends.
func testNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating a test namespace: %v", err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	return ns.Name
}
