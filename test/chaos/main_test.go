package chaos

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// fedwardenBin is the fedwarden binary built for this test run.
var fedwardenBin string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	ctrllog.SetLogger(logr.Discard())
	// The WriteLogs' watches retry, and say so through klog, while a
	// member is down on purpose.
	klog.SetLogger(logr.Discard())
	if testing.Short() {
		fmt.Fprintln(os.Stderr, shortModeReason)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "fedwarden-chaos-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "creating a work directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if fedwardenBin, err = fedtest.Build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// shortModeReason says why the tests of this package skip in -short mode.
const shortModeReason = "skipped in -short mode: the chaos tests start kube-apiservers, kill processes and take minutes; " +
	"run go test without -short to run them"

// skipInShortMode skips the test in -short mode, in which TestMain builds
// nothing. Every test of this package calls it first.
func skipInShortMode(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip(shortModeReason)
	}
}

// loadSlack is how much longer than its settings allow a step may take on
// a loaded machine (two cores shared with other work). Waits end as soon
// as the state is seen: only a failing test waits this long.
const loadSlack = time.Minute

// probes are the controller-manager's health-probe settings in every bed:
// three failed probes two seconds apart make a member Offline. A stopped
// kube-apiserver refuses connections at once, so the long timeout does not
// slow that down; it only keeps a slow answer on a loaded machine from
// counting as a failure.
var probes = fedtest.Settings{ProbePeriod: 2 * time.Second, ProbeTimeout: 10 * time.Second, FailureThreshold: 3}

// offlineWithin bounds how long a Ready member whose API server stopped
// may take to be marked not Ready: the failure threshold's probes, each
// after a period and up to the timeout, plus loadSlack.
func offlineWithin() time.Duration {
	return time.Duration(probes.FailureThreshold)*(probes.ProbePeriod+probes.ProbeTimeout) + loadSlack
}

// bed is a host, members and a controller-manager of one test, with
// FederatedConfigMaps enabled: the cheapest kind to propagate.
type bed struct {
	*localfed.Federation
	fb      *fedtest.Bed
	t       *testing.T
	host    client.Client
	members map[string]client.Client
	configs map[string]*rest.Config
	typ     propagation.Type
	cm      *fedtest.ControllerManager
}

// startBed starts a host and n members, a controller-manager, joins the
// members and enables ConfigMaps. The members run only the controllers
// that join needs: only Fedwarden writes their ConfigMaps.
func startBed(t *testing.T, n int) *bed {
	t.Helper()
	return newBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(n), localfed.WithControllers(fedtest.JoinControllers...)}})
}

// newBed starts a bed as o says (fedtest.StartBed), with a
// controller-manager probing with probes and cmArgs as more flags, every
// member joined and ConfigMaps enabled.
func newBed(t *testing.T, o fedtest.Options, cmArgs ...string) *bed {
	t.Helper()
	skipInShortMode(t)
	s := probes
	s.Args = cmArgs
	o.Bin, o.ControllerManager, o.Join, o.Enable, o.Unthrottled = fedwardenBin, &s, true, []string{"configmaps"}, true
	fb := fedtest.StartBed(t, o)
	b := &bed{Federation: fb.Fed, fb: fb, t: t, host: fb.Host, members: fb.Members, configs: map[string]*rest.Config{}, cm: fb.CM}
	for _, m := range fb.Fed.Members {
		b.configs[m.Name] = fedtest.Unthrottled(m.Config)
	}
	b.typ = propagation.TypeFromConfig(fb.Types["configmaps"])
	return b
}

// startControllerManager starts a controller-manager on the bed; the bed
// stops it when the test ends.
func (b *bed) startControllerManager(args ...string) {
	b.t.Helper()
	s := probes
	s.Args = args
	b.cm = b.fb.StartControllerManager(b.t, s)
}

// namespace creates a namespace of the host for the test.
func (b *bed) namespace(prefix string) string {
	b.t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := b.host.Create(b.t.Context(), ns); err != nil {
		b.t.Fatalf("creating a test namespace: %v", err)
	}
	return ns.Name
}

// ledger returns the Ledger of the FederatedConfigMaps of namespace.
func (b *bed) ledger(namespace string) *Ledger {
	return &Ledger{Host: b.host, Members: b.members, Type: b.typ, Namespace: namespace}
}

// watchWrites starts a WriteLog of the ConfigMaps of namespace in every
// member, stopped when the test ends.
func (b *bed) watchWrites(namespace string) *WriteLog {
	b.t.Helper()
	w, err := WatchWrites(b.t.Context(), b.configs, b.typ.TargetResource, namespace)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(w.Stop)
	return w
}

// waitClean waits up to timeout until the ledger of namespace is clean
// and fails the test with the last report otherwise; it returns the clean
// report and how long it took.
func (b *bed) waitClean(l *Ledger, timeout time.Duration) (Report, time.Duration) {
	b.t.Helper()
	return b.waitFor(l, timeout, Report.Clean)
}

func (b *bed) waitFor(l *Ledger, timeout time.Duration, done func(Report) bool) (Report, time.Duration) {
	b.t.Helper()
	start := time.Now()
	var last Report
	poll.Eventually(b.t, timeout, "nothing lost, orphaned, at the wrong version or being deleted", func(ctx context.Context) (bool, string) {
		r, err := l.Check(ctx)
		if err != nil {
			return false, err.Error()
		}
		last = r
		if done(r) {
			return true, ""
		}
		return false, r.Err().Error()
	})
	return last, time.Since(start)
}
