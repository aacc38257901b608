package localfed

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/fedwarden/fedwarden/test/poll"
)

// TestLeanMembers checks what WithLeanMembers trims, and only there: the
// lean members serve core, apps and RBAC but not leanDisabledAPIs, and run
// on one core, while the host serves every group; a member added later is
// lean too. Killing and restarting one lean member leaves the other's
// objects in the shared etcd alone, and the restarted member is as lean as
// before, with its objects.
func TestLeanMembers(t *testing.T) {
	t.Parallel()
	fed := startFederation(t, WithMembers(2), WithLeanMembers(), WithControllers())
	ctx := context.Background()
	checkServed(t, fed.Host, true)
	for _, m := range fed.Members {
		checkServed(t, m, false)
		checkOneProc(t, m)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "of-" + m.Name}, Data: map[string]string{"k": "v"}}
		if _, err := mustClient(t, m).CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating a ConfigMap in %s: %v", m.Name, err)
		}
	}

	one, two := fed.Members[0], fed.Members[1]
	if err := one.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := getConfigMap(mustClient(t, two), "of-"+two.Name); err != nil {
		t.Errorf("%s, while %s is down: %v", two.Name, one.Name, err)
	}
	if err := one.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	for _, m := range fed.Members {
		client := mustClient(t, m)
		poll.Eventually(t, 30*time.Second, "the ConfigMap of "+m.Name, poll.NoError(func(context.Context) error { return getConfigMap(client, "of-"+m.Name) }))
	}
	checkServed(t, one, false)
	checkOneProc(t, one)

	added, err := fed.AddMember(ctx, "added")
	if err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	checkServed(t, added, false)
}

// checkServed fails t unless c serves core, apps and RBAC, and serves the
// versions of leanDisabledAPIs exactly when all is set.
func checkServed(t *testing.T, c *Cluster, all bool) {
	t.Helper()
	served := servedGroupVersions(t, mustClient(t, c))
	for _, gv := range []string{"v1", "apps/v1", "rbac.authorization.k8s.io/v1", "coordination.k8s.io/v1", "apiextensions.k8s.io/v1"} {
		if !slices.Contains(served, gv) {
			t.Errorf("%s does not serve %s; it serves %v", c.Name, gv, served)
		}
	}
	for _, gv := range leanDisabledAPIs {
		if slices.Contains(served, gv) != all {
			t.Errorf("%s serves %s: %t, want %t", c.Name, gv, !all, all)
		}
	}
}

func servedGroupVersions(t *testing.T, client kubernetes.Interface) []string {
	t.Helper()
	groups, err := client.Discovery().ServerGroups()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	var served []string
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			served = append(served, v.GroupVersion)
		}
	}
	return served
}

// checkOneProc fails t unless c's kube-apiserver runs with GOMAXPROCS=1,
// or with this process's GOMAXPROCS if it has one.
func checkOneProc(t *testing.T, c *Cluster) {
	t.Helper()
	want := "GOMAXPROCS=1"
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		want = "GOMAXPROCS=" + v
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.proc.Load().pid()))
	if err != nil {
		t.Skipf("no /proc to read the environment of %s's kube-apiserver: %v", c.Name, err)
	}
	if !slices.Contains(strings.Split(string(environ), "\x00"), want) {
		t.Errorf("%s's kube-apiserver runs without %s", c.Name, want)
	}
}
