package localfed

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/fedwarden/fedwarden/config/crd"
)

func TestStartHostAndMembers(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "fed")
	fed := startFederation(t, WithMembers(2), WithDataDir(dir))

	var names []string
	for _, c := range fed.Clusters() {
		names = append(names, c.Name)
	}
	if got, want := names, []string{"host", "member-1", "member-2"}; !slices.Equal(got, want) {
		t.Fatalf("clusters %v, want %v", got, want)
	}
	if fed.Member("member-2") != fed.Members[1] || fed.Member("nope") != nil {
		t.Errorf("Member does not find members by name")
	}
	for _, c := range fed.Clusters() {
		t.Run(c.Name, func(t *testing.T) { checkCluster(t, c) })
	}
	t.Run("CRDs established in host", func(t *testing.T) { checkCRDs(t, fed.Host) })
	t.Run("admission policies enforced in host", func(t *testing.T) { checkAdmissionPolicies(t, fed.Host) })
	t.Run("members do not share objects", func(t *testing.T) {
		checkSeparateStorage(t, fed.Member("member-1"), fed.Member("member-2"), fed.Host)
	})
	t.Run("RBAC denies a user without bindings", func(t *testing.T) { checkRBAC(t, fed.Member("member-1")) })
}

// checkCluster checks what a user of c relies on: a ready apiserver reached
// with verified TLS, through both the config and the kubeconfig.
func checkCluster(t *testing.T, c *Cluster) {
	if c.Config.Insecure || len(c.Config.CAData) == 0 || string(c.Config.CAData) != string(c.CAData) {
		t.Errorf("admin config must verify the server with CAData")
	}
	client := mustClient(t, c)
	body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
	if err != nil || string(body) != "ok" {
		t.Errorf("/readyz = %q, %v", body, err)
	}
	kc, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		t.Fatalf("loading kubeconfig: %v", err)
	}
	if kc.CurrentContext != c.Name {
		t.Errorf("current context %q, want %q", kc.CurrentContext, c.Name)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	viaFile, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := viaFile.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("using the kubeconfig: %v", err)
	}
	info, err := os.Stat(filepath.Join(filepath.Dir(c.Kubeconfig), adminKeyFile))
	if err != nil {
		t.Fatalf("admin key file: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("admin key file has mode %v, want 0600", info.Mode().Perm())
	}
}

func checkCRDs(t *testing.T, host *Cluster) {
	want, err := crd.Objects()
	if err != nil {
		t.Fatal(err)
	}
	if len(want) == 0 {
		t.Fatal("no CRDs are embedded")
	}
	client, err := clientset.NewForConfig(host.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), w.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("CRD %s: %v", w.Name, err)
			continue
		}
		if !established(got) {
			t.Errorf("CRD %s is not Established: %v", w.Name, got.Status.Conditions)
		}
	}
	disco, err := discovery.NewDiscoveryClientForConfig(host.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := discoverable(disco, want); err != nil {
		t.Errorf("right after Start: %v", err)
	}
}

// checkSeparateStorage writes a ConfigMap to writer and expects the others
// not to see it.
func checkSeparateStorage(t *testing.T, writer *Cluster, others ...*Cluster) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "only-in-" + writer.Name}}
	if _, err := mustClient(t, writer).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating ConfigMap: %v", err)
	}
	for _, other := range others {
		_, err := mustClient(t, other).CoreV1().ConfigMaps("default").Get(ctx, cm.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap of %s in %s: got error %v, want NotFound", writer.Name, other.Name, err)
		}
	}
}

func checkRBAC(t *testing.T, c *Cluster) {
	ctx := context.Background()
	if _, err := mustClient(t, c).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("admin listing secrets: %v", err)
	}
	cfg, err := c.ConfigForUser("nobody", "some-group")
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("user without bindings listing secrets: got %v, want Forbidden", err)
	}
}

func TestTwoFederationsInParallel(t *testing.T) {
	t.Parallel()
	skipShort(t)
	feds := make([]*Federation, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range feds {
		wg.Go(func() { feds[i], errs[i] = Start(context.Background(), WithMembers(1)) })
	}
	wg.Wait()
	for i, fed := range feds {
		if errs[i] != nil {
			t.Errorf("Start: %v", errs[i])
			continue
		}
		t.Cleanup(func() {
			if err := fed.Stop(); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
	}
	if t.Failed() {
		t.FailNow()
	}
	endpoints := map[string]bool{}
	for _, fed := range feds {
		for _, c := range fed.Clusters() {
			if endpoints[c.Endpoint] {
				t.Errorf("endpoint %s used twice", c.Endpoint)
			}
			endpoints[c.Endpoint] = true
		}
		checkSeparateStorage(t, fed.Member("member-1"), fed.Host)
	}
	// The same names in both federations, yet separate storage.
	checkSeparateStorage(t, feds[0].Host, feds[1].Host)
}

func TestStopLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	fed := startFederation(t, WithMembers(1))
	extra, err := fed.AddMember(t.Context(), "extra")
	if err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if _, err := fed.AddMember(t.Context(), fed.Members[0].Name); err == nil {
		t.Error("AddMember with the name of a member succeeded")
	}
	// A cluster of its own: not the member's storage under another name.
	checkSeparateStorage(t, fed.Members[0], extra)
	if err := fed.RemoveMember(fed.Members[0]); err == nil {
		t.Error("RemoveMember of a member not added succeeded")
	}
	removed, err := fed.AddMember(t.Context(), "removed")
	if err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if err := fed.RemoveMember(removed); err != nil {
		t.Errorf("RemoveMember: %v", err)
	}
	if removed.Running() {
		t.Error("a removed member still runs")
	}
	pids := fed.pids()
	if len(pids) != 7 {
		t.Fatalf("%d processes, want etcd, 3 kube-apiservers and 3 kube-controller-managers", len(pids))
	}
	if err := fed.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	for _, pid := range pids {
		if alive(t, pid) {
			t.Errorf("process %d still exists after Stop", pid)
		}
	}
	if left := processesMentioning(t, fed.Dir); len(left) > 0 {
		t.Errorf("processes %v still use %s", left, fed.Dir)
	}
	if _, err := os.Stat(fed.Dir); !os.IsNotExist(err) {
		t.Errorf("temporary data directory still there: %v", err)
	}
	if err := fed.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if _, err := fed.AddMember(context.Background(), "late"); err == nil {
		t.Error("AddMember after Stop succeeded")
	}
	if extra.Running() {
		t.Error("the added member still runs after Stop")
	}
	for _, c := range fed.Clusters() {
		if c.Running() {
			t.Errorf("%s still running", c.Name)
		}
		if err := c.Restart(context.Background()); err == nil {
			t.Errorf("Restart of %s after Stop succeeded", c.Name)
		}
	}
}

func mustClient(t testing.TB, c *Cluster) kubernetes.Interface {
	t.Helper()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	return client
}
