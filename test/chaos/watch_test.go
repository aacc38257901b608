package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/test/poll"
)

// A member's API server is killed and started again, with the same data,
// in the middle of a bulk create of 150 FederatedConfigMaps on three
// members: the controller-manager's watches of it break. Afterwards
// nothing is lost, orphaned or at the wrong version, each copy was written
// once, and the member's informers have resumed: a copy edited and one
// deleted by hand there are healed at once (the resync period is ten
// minutes), which only a watch event can cause.
func TestAMemberRestartedDuringABulkCreate(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startBed(t, 3)
	ns := b.namespace("watch")
	l := b.ledger(ns)
	writes := b.watchWrites(ns)
	n := bulkSize(t) / 2
	restarted := b.Members[1]
	clusters := make([]string, 0, len(b.Members))
	for _, m := range b.Members {
		clusters = append(clusters, m.Name)
	}
	var objs []*unstructured.Unstructured
	for i := range n {
		objs = append(objs, federatedConfigMap(ns, fmt.Sprintf("cm-%04d", i), clusters, nil))
	}
	start := time.Now()
	created := make(chan error, 1)
	go func() { created <- createAll(t.Context(), b.host, objs, 8) }()
	poll.Eventually(t, 3*time.Minute+loadSlack, fmt.Sprintf("%d copies in %s", n/4, restarted.Name), func(context.Context) (bool, string) {
		_, c := writes.Count()
		return c[restarted.Name] >= n/4, fmt.Sprintf("%d copies", c[restarted.Name])
	})
	_, before := writes.Count()
	stopped := time.Now()
	// Killed rather than stopped: a graceful stop takes a minute of
	// shutdown delay on a loaded machine, and the watches break the same.
	if err := restarted.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := restarted.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s restarted after %d of its copies, in %s", restarted.Name, before[restarted.Name], time.Since(stopped).Round(time.Millisecond))
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	report, took := b.waitClean(l, 3*time.Minute+loadSlack)
	t.Logf("converged %s after the restart, %s after the first create: %s", took.Round(time.Millisecond), time.Since(start).Round(time.Millisecond), report)
	// The watches of the restarted member ended with it (its new
	// kube-apiserver answers that their resourceVersion is too old): its
	// writes are counted by the controller-manager instead, which counts
	// every apply it attempts, failed ones (while the member was down)
	// included.
	extra, offenders := writes.Beyond(func(cluster, _ string) int {
		if cluster == restarted.Name {
			return n // not counted here
		}
		return 1
	})
	w, _ := writes.Count()
	attempts := map[string]float64{}
	for _, m := range b.Members {
		attempts[m.Name] = b.applies(t, m.Name)
	}
	t.Logf("member writes seen by watches: %v (watches ended early: %v); apply attempts counted by the controller-manager: %v; writes beyond one per copy in the members not restarted: %d",
		w, writes.Ended(), attempts, extra)
	if extra > 0 {
		t.Errorf("%d writes beyond one per copy: %v", extra, offenders)
	}
	if report.Copies != n*len(clusters) {
		t.Errorf("%d copies, want %d", report.Copies, n*len(clusters))
	}

	// The informers resumed: a hand edit and a hand deletion in the
	// restarted member are healed without waiting for a resync.
	member := b.members[restarted.Name]
	edited := &corev1.ConfigMap{}
	if err := member.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: objs[0].GetName()}, edited); err != nil {
		t.Fatal(err)
	}
	edited.Data["greeting"] = "edited by hand"
	if err := member.Update(t.Context(), edited); err != nil {
		t.Fatal(err)
	}
	gone := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: objs[1].GetName()}}
	if err := member.Delete(t.Context(), gone); err != nil {
		t.Fatal(err)
	}
	// A minute and the slack: far less than the ten-minute resync.
	report, took = b.waitClean(l, time.Minute+loadSlack)
	t.Logf("a hand edit and a hand deletion in %s healed in %s: %s", restarted.Name, took.Round(time.Millisecond), report)
}
