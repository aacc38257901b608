package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// bulkSize is how many FederatedConfigMaps the bulk cases create: 300, or
// CHAOS_BULK for a larger run.
func bulkSize(t *testing.T) int {
	if v := os.Getenv("CHAOS_BULK"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 10 {
			t.Fatalf("CHAOS_BULK=%q: want a number of at least 10", v)
		}
		return n
	}
	return 300
}

// unfinalizable is how many resources of the crash case have their
// finalizer refused by the host: it never lands, so no copy of theirs may
// be written.
const unfinalizable = 5

// crashSnapshot is what the host and members hold at one kill.
type crashSnapshot struct {
	federated, finalized, copies, inSync int
	// unprotected are the resources that have a copy somewhere but no
	// finalizer: deleted now, nothing would ever delete their copies.
	unprotected []string
}

func (s crashSnapshot) String() string {
	return fmt.Sprintf("%d federated (%d with the finalizer), %d copies, %d CPVs in sync everywhere, %d with a copy and no finalizer",
		s.federated, s.finalized, s.copies, s.inSync, len(s.unprotected))
}

// snapshot reads what the bed holds in namespace.
func (b *bed) snapshot(ctx context.Context, l *Ledger) (crashSnapshot, []unstructured.Unstructured, error) {
	var s crashSnapshot
	feds, err := listFederated(ctx, b.host, l.Namespace)
	if err != nil {
		return s, nil, err
	}
	hasCopy := map[string]bool{}
	for cluster, c := range b.members {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("v1")
		list.SetKind("ConfigMapList")
		if err := c.List(ctx, list, client.InNamespace(l.Namespace), client.MatchingLabels{typesv1beta1.LabelManaged: "true"}); err != nil {
			return s, nil, fmt.Errorf("listing ConfigMaps in %s: %w", cluster, err)
		}
		s.copies += len(list.Items)
		for _, cm := range list.Items {
			hasCopy[cm.GetName()] = true
		}
	}
	s.federated = len(feds)
	for _, fed := range feds {
		if controllerutil.ContainsFinalizer(&fed, typesv1beta1.FinalizerSync) {
			s.finalized++
		} else if hasCopy[fed.GetName()] {
			s.unprotected = append(s.unprotected, fed.GetName())
		}
	}
	if s.inSync, err = b.cpvsInSync(ctx, l.Namespace); err != nil {
		return s, nil, err
	}
	return s, feds, nil
}

// cpvsInSync counts the CPVs of namespace that record every member InSync.
func (b *bed) cpvsInSync(ctx context.Context, namespace string) (int, error) {
	var cpvs typesv1beta1.ClusterPropagatedVersionList
	if err := b.host.List(ctx, &cpvs, client.InNamespace(namespace)); err != nil {
		return 0, err
	}
	n := 0
	for _, cpv := range cpvs.Items {
		in := 0
		for _, cv := range cpv.Status.ClusterVersions {
			if cv.State == typesv1beta1.InSync {
				in++
			}
		}
		if in == len(b.members) {
			n++
		}
	}
	return n, nil
}

// The controller-manager is killed with SIGKILL three times while 300
// FederatedConfigMaps are created on three members: early (few copies, many
// finalizers still to add), in the middle of the members' writes, and
// while the CPVs' statuses are being written. Each kill point is drawn at
// random from a range of the progress seen, not from a clock. While it is
// dead, resources are deleted: the few, if any, that have a copy but no
// finalizer yet (the window "copy written, finalizer not landed"), and
// others, synced or not. At each kill no copy may exist without its
// resource's finalizer: a few resources have their finalizer refused by
// the host (denyFinalizers), which holds that window open for as long as
// the test lasts, and none of them may get a copy. After the last restart
// nothing is lost or orphaned, every copy and CPV is at the current
// version, and each copy was written once.
func TestKilledThreeTimesDuringABulkCreate(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startBed(t, 3)
	ns := b.namespace("crash")
	l := b.ledger(ns)
	writes := b.watchWrites(ns)
	denyFinalizers(t, b.host, ns)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	n := bulkSize(t)
	t.Logf("%d FederatedConfigMaps × %d members; kill points drawn with seed %d", n, len(b.Members), seed)
	clusters := make([]string, 0, len(b.Members))
	for _, m := range b.Members {
		clusters = append(clusters, m.Name)
	}
	var objs []*unstructured.Unstructured
	for i := range n {
		var labels map[string]string
		if i%(n/unfinalizable) == 0 {
			labels = map[string]string{denyFinalizerLabel: "true"}
		}
		objs = append(objs, federatedConfigMap(ns, fmt.Sprintf("cm-%04d", i), clusters, labels))
	}
	c := &crashRun{b: b, l: l, writes: writes, rng: rng, objs: objs, n: n, clusters: len(clusters), start: time.Now()}
	created := make(chan error, 1)
	go func() { created <- createAll(t.Context(), b.host, objs, 8) }()
	for i, p := range c.killPoints() {
		c.killAt(t, i+1, p)
	}
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	// The resources whose finalizer never lands go too, now, with the
	// controller-manager running.
	whileDead := len(c.deleted)
	for _, obj := range objs {
		if obj.GetLabels()[denyFinalizerLabel] == "" || slices.Contains(c.deleted, obj.GetName()) {
			continue
		}
		if err := b.host.Delete(t.Context(), federatedConfigMap(ns, obj.GetName(), nil, nil)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		c.deleted = append(c.deleted, obj.GetName())
	}
	report, took := b.waitClean(l, 3*time.Minute+loadSlack)
	if v, _, err := b.cm.Sum(t.Context(), "fedwarden_member_writes_total", `verb="apply"`); err == nil {
		c.metricWrites += v
	}
	t.Logf("converged %s after the last restart, %s after the first create: %s; %d deleted while the controller-manager was dead, %d refused the finalizer and deleted after",
		took.Round(time.Millisecond), time.Since(c.start).Round(time.Millisecond), report, whileDead, len(c.deleted)-whileDead)
	if want := n - len(c.deleted); report.Federated != want || report.Copies != want*len(clusters) {
		t.Errorf("%d federated and %d copies, want %d and %d", report.Federated, report.Copies, want, want*len(clusters))
	}
	extra, offenders := writes.Beyond(func(cluster, name string) int { return 1 })
	w, creates := writes.Count()
	t.Logf("member writes seen by watches: %v (creates %v); apply writes counted by the controller-managers: %v; writes beyond one per copy: %d", w, creates, c.metricWrites, extra)
	if extra > 0 {
		t.Errorf("%d writes beyond one per copy: %v", extra, offenders)
	}
	if dups := writes.Duplicates(); len(dups) > 0 {
		t.Errorf("%d writes applied what the copy already had: %v", len(dups), dups)
	}
}

// crashRun is the state of TestKilledThreeTimesDuringABulkCreate across
// its kills.
type crashRun struct {
	b        *bed
	l        *Ledger
	writes   *WriteLog
	rng      *rand.Rand
	objs     []*unstructured.Unstructured
	n        int // resources
	clusters int
	start    time.Time
	// last is what the previous kill saw.
	last crashSnapshot
	// deleted are the resources deleted so far.
	deleted []string
	// metricWrites sums the apply writes the killed controller-managers
	// counted, scraped just before each kill.
	metricWrites float64
}

// killPoint is when to kill the controller-manager.
type killPoint struct {
	what string
	// reached tells, from the progress seen, that it is time to kill.
	reached func(ctx context.Context) (bool, string)
}

// copiesCreated counts the copies created so far, in all members.
func (c *crashRun) copiesCreated() int {
	_, created := c.writes.Count()
	sum := 0
	for _, v := range created {
		sum += v
	}
	return sum
}

// killPoints draws the three kill points: early, mid-apply and
// mid-status. Each is drawn from a range of the whole, and is at least a
// step past what the previous kill saw, so that every restarted
// controller-manager works a while before it dies.
func (c *crashRun) killPoints() []killPoint {
	total := c.n * c.clusters
	early := int(float64(total) * (0.03 + 0.07*c.rng.Float64()))
	middle := int(float64(total) * (0.4 + 0.2*c.rng.Float64()))
	statuses := int(float64(c.n) * (0.2 + 0.4*c.rng.Float64()))
	return []killPoint{
		{fmt.Sprintf("early, after %d copies", early), func(context.Context) (bool, string) {
			n := c.copiesCreated()
			return n >= early, fmt.Sprintf("%d copies", n)
		}},
		{fmt.Sprintf("mid-apply, after %d copies and %d more since the last kill", middle, total/20), func(context.Context) (bool, string) {
			n := c.copiesCreated()
			return n >= middle && n >= c.last.copies+total/20, fmt.Sprintf("%d copies", n)
		}},
		{fmt.Sprintf("mid-status, after %d CPVs in sync everywhere and %d more since the last kill", statuses, c.n/20), func(ctx context.Context) (bool, string) {
			in, err := c.b.cpvsInSync(ctx, c.l.Namespace)
			if err != nil {
				return false, err.Error()
			}
			return in >= statuses && (in >= c.last.inSync+c.n/20 || in >= c.n-len(c.deleted)-unfinalizable), fmt.Sprintf("%d CPVs in sync", in)
		}},
	}
}

// killAt waits for kill point p, kills the controller-manager, checks that
// no copy exists without its finalizer, deletes a few resources while it
// is dead, and starts another.
func (c *crashRun) killAt(t *testing.T, i int, p killPoint) {
	t.Helper()
	poll.Eventually(t, 3*time.Minute+loadSlack, "kill point "+p.what, p.reached)
	// What the dead process counted is lost with it: read it first.
	if v, _, err := c.b.cm.Sum(t.Context(), "fedwarden_member_writes_total", `verb="apply"`); err == nil {
		c.metricWrites += v
	}
	c.b.cm.Kill()
	s, feds, err := c.b.snapshot(t.Context(), c.l)
	if err != nil {
		t.Fatal(err)
	}
	c.last = s
	t.Logf("kill %d (%s) at %s: %s", i, p.what, time.Since(c.start).Round(time.Millisecond), s)
	// The finalizer lands before any copy is written, even one the host
	// refuses: no copy may exist without it.
	for _, name := range s.unprotected {
		refused := slices.ContainsFunc(c.objs, func(o *unstructured.Unstructured) bool {
			return o.GetName() == name && o.GetLabels()[denyFinalizerLabel] != ""
		})
		t.Errorf("kill %d: %s has a copy but no finalizer (its finalizer refused by the host: %t): deleted now, its copies would be orphaned", i, name, refused)
	}
	// While it is dead: delete the unprotected ones, and a few others,
	// finalized or not synced yet.
	victims := slices.Clone(s.unprotected)
	for _, j := range c.rng.Perm(len(feds))[:min(4, len(feds))] {
		victims = append(victims, feds[j].GetName())
	}
	for _, name := range victims {
		if slices.Contains(c.deleted, name) {
			continue
		}
		if err := c.b.host.Delete(t.Context(), federatedConfigMap(c.l.Namespace, name, nil, nil)); client.IgnoreNotFound(err) != nil {
			t.Fatal(err)
		}
		c.deleted = append(c.deleted, name)
	}
	c.b.startControllerManager()
}
