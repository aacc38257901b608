package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// hungProbes find a frozen member in about ten seconds: two probes in a
// row that get no answer within four.
var hungProbes = probeSettings{period: 2 * time.Second, timeout: 4 * time.Second, failureThreshold: 2}

// failoverMembers are the failover bed's members; failing is the one that
// is frozen.
var (
	failoverMembers = []string{"fo-a", "fo-b", "fo-c"}
	failing         = "fo-c"
)

// kwokDeployment is a FederatedDeployment of one replica of Pods that run
// on each member's KWOK Node, with the placement given (YAML, indented as
// spec.placement's fields).
func kwokDeployment(name, ns, placement string) string {
	return fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  template:
    spec:
      replicas: 1
      selector: {matchLabels: {app: %[1]s}}
      template:
        metadata: {labels: {app: %[1]s}}
        spec:
          nodeName: %[3]s
          containers: [{name: web, image: "nginx:1.27", imagePullPolicy: IfNotPresent}]
  placement:
%[4]s
`, name, ns, fedtest.KWOKNodeName, placement)
}

// dividedDeployment is a kwokDeployment placed on the failover bed's
// members, with a ReplicaSchedulingPreference dividing total replicas
// evenly, and the failover policy given (none when empty).
func dividedDeployment(name, ns string, total int, failover string) string {
	placement := "    clusters: [{name: fo-a}, {name: fo-b}, {name: fo-c}]"
	if failover != "" {
		placement += "\n    failover: " + failover
	}
	return kwokDeployment(name, ns, placement) + fmt.Sprintf(`---
apiVersion: scheduling.kubefed.io/v1alpha1
kind: ReplicaSchedulingPreference
metadata: {name: %s, namespace: %s}
spec: {targetKind: FederatedDeployment, totalReplicas: %d}
`, name, ns, total)
}

// A member whose API server hangs fails over: after the toleration, the
// replicas a ReplicaSchedulingPreference gave it run, Ready, on the other
// members, its copy untouched; when it is back they return by themselves
// (Automatic) or on `fedwarden failback` (Manual), and the others scale
// down. A resource without a policy, and an outage of every member, move
// nothing.
func TestFailover(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	receiver := newCloudEventReceiver(t)
	args := []string{"--resync-period", "5s", "--leader-elect=false", "--notify-webhook", receiver.URL + "/hook"}
	b, cm := startJoinedBed(t, fedtest.Options{
		Federation: []localfed.Option{localfed.WithMemberNames(failoverMembers...)},
		KWOK:       true,
	}, hungProbes, args...)
	enableDeploymentsIn(t, b.Host)
	began := time.Now()
	phase := func(what string) { t.Logf("%s: %s", time.Since(began).Round(100*time.Millisecond), what) }
	ns := testNamespace(t, b.Host)
	const policy = "{tolerationSeconds: 8, failbackAfterSeconds: 10}"
	for _, manifest := range []string{
		dividedDeployment("auto", ns, 6, policy),
		dividedDeployment("manual", ns, 3, "{tolerationSeconds: 8, failback: Manual, failbackAfterSeconds: 0}"),
		dividedDeployment("steady", ns, 3, ""),
	} {
		for _, doc := range strings.Split(manifest, "\n---\n") {
			createObject(t, b.Host, decode(t, doc))
		}
	}
	// spread runs in one cluster per region: fo-a (r1) and fo-c (r2); fo-b,
	// in r2 too once it has a region, is chosen only as a surge.
	setRegion(t, b, "fo-a", "r1")
	setRegion(t, b, "fo-c", "r2")
	createObject(t, b.Host, decode(t, spreadDeployment("spread", ns, policy)))
	want := func(a, b, c int32) map[string]int32 { return map[string]int32{"fo-a": a, "fo-b": b, "fo-c": c} }
	waitForReady(t, b, ns, "auto", want(2, 2, 2))
	waitForReady(t, b, ns, "manual", want(1, 1, 1))
	waitForReady(t, b, ns, "steady", want(1, 1, 1))
	waitForReady(t, b, ns, "spread", map[string]int32{"fo-a": 1, "fo-c": 1})
	setRegion(t, b, "fo-b", "r2")
	uid := bedDeployment(t, b, failing, ns, "auto").UID
	spreadUID := bedDeployment(t, b, failing, ns, "spread").UID

	phase("every copy ready; freezing " + failing)
	frozen := frozenMember(t, b, failing)
	frozen.freeze(t)
	frozenAt := time.Now()
	waitForReady(t, b, ns, "auto", map[string]int32{"fo-a": 3, "fo-b": 3})
	t.Logf("%s frozen: its 2 replicas ran, ready, on the other members %s later (toleration 8 s)", failing, time.Since(frozenAt).Round(100*time.Millisecond))
	waitForReady(t, b, ns, "manual", map[string]int32{"fo-a": 2, "fo-b": 1})
	for _, name := range []string{"auto", "manual"} {
		cpv := waitForFailoverCPV(t, b, ns, name, func(cpv *typesv1beta1.ClusterPropagatedVersion) bool { return failedOverAt(cpv, failing) != nil })
		if n := placedReplicas(cpv)[failing]; n != map[string]int32{"auto": 2, "manual": 1}[name] {
			t.Errorf("%s: the failed cluster's recorded replicas = %d; want what it ran, kept", name, n)
		}
		waitForEvent(t, b.Host, ns, name, typesv1beta1.EventFailedOver, "cluster "+failing+" failed")
		if e := receiver.waitFor(t, notify.FailedOver, ns, name); e.event.Data.Cluster != failing {
			t.Errorf("the %s CloudEvent about %s names cluster %q; want %s", notify.FailedOver, name, e.event.Data.Cluster, failing)
		}
		waitForConditionOf(t, b.Host, "FederatedDeployment", ns, name, typesv1beta1.FederatedFailedOver, metav1.ConditionTrue, typesv1beta1.ReasonFailedOver, "cluster "+failing+" failed over at")
	}
	phase("divided replicas moved")
	// The hung member tripped its breaker (its probes wait longer than the
	// stall timeout), which the metrics count.
	if trips := cm.breakerTrips(t, failing); trips < 1 {
		t.Errorf("%s hung: fedwarden_cluster_breaker_trips_total = %v; want at least 1", failing, trips)
	}
	// A spread placement gets a surge copy in fo-b, fo-c keeping its own.
	waitForReady(t, b, ns, "spread", map[string]int32{"fo-a": 1, "fo-b": 1})
	cpv := waitForFailoverCPV(t, b, ns, "spread", func(cpv *typesv1beta1.ClusterPropagatedVersion) bool { return failedOverAt(cpv, failing) != nil })
	if got := surges(cpv); !slices.Equal(got, []string{"fo-b"}) {
		t.Errorf("spread during the outage: surge clusters %v, placed %+v; want fo-b alone", got, cpv.Spec.Clusters)
	}
	// Without a policy an outage moves nothing.
	if got := placedReplicas(waitForFailoverCPV(t, b, ns, "steady", nil)); !maps.Equal(got, want(1, 1, 1)) {
		t.Errorf("steady, without a failover policy, during the outage: %v; want 1/1/1 kept", got)
	}

	// The controller-manager crashes mid-failover, and fo-c comes back
	// before a new one starts: it goes on from what the CPVs record,
	// failing nothing over again, and fails back. (Started while fo-c
	// hangs, the new one runs its controllers at once, but the test bed's
	// leak scanner, which watches every cluster again for a new
	// controller-manager, waits about a minute for fo-c first.)
	phase("surge copy up; killing the controller-manager")
	cm.Kill()
	frozen.thaw(t)
	thawedAt := time.Now()
	startControllerManager(t, b, hungProbes, args...)
	// Automatic: back after failbackAfterSeconds with its copy Healthy, its
	// replicas return to the same Deployment, and the others scale down.
	waitForReady(t, b, ns, "auto", want(2, 2, 2))
	t.Logf("%s thawed and a controller-manager started: 2/2/2 again %s later (failbackAfter 10 s)", failing, time.Since(thawedAt).Round(100*time.Millisecond))
	if got := bedDeployment(t, b, failing, ns, "auto").UID; got != uid {
		t.Errorf("the failed member's Deployment is a new object (UID %s, was %s); want the same one throughout", got, uid)
	}
	waitForEvent(t, b.Host, ns, "auto", typesv1beta1.EventFailedBack, "cluster "+failing+" failed back")
	receiver.waitFor(t, notify.FailedBack, ns, "auto")
	if n := eventCount(t, b.Host, ns, "auto", typesv1beta1.EventFailedOver); n != 1 {
		t.Errorf("auto has %d FailedOver Events after a restart mid-failover; want the one", n)
	}
	waitForConditionOf(t, b.Host, "FederatedDeployment", ns, "auto", typesv1beta1.FederatedFailedOver, metav1.ConditionFalse, typesv1beta1.ReasonFailedBack, "every placed cluster runs its own replicas again")

	phase("failed back")
	// The surge copy goes once fo-c is back and healthy; fo-c's stayed.
	poll.Eventually(t, time.Minute, "the surge copy in fo-b removed", func(ctx context.Context) (bool, string) {
		d := &appsv1.Deployment{}
		err := b.Members["fo-b"].Get(ctx, types.NamespacedName{Namespace: ns, Name: "spread"}, d)
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if got := bedDeployment(t, b, failing, ns, "spread").UID; got != spreadUID {
		t.Errorf("spread: the failed member's Deployment is a new object (UID %s, was %s)", got, spreadUID)
	}
	if cpv := waitForFailoverCPV(t, b, ns, "spread", nil); len(surges(cpv)) > 0 || failedOverAt(cpv, failing) != nil {
		t.Errorf("spread after failback: placed %+v; want no surge and nothing failed over", cpv.Spec.Clusters)
	}

	// The failover ledgers record each episode, with how it ended.
	for name, want := range map[string]string{"auto": typesv1beta1.FailoverEndedAutomatic, "spread": typesv1beta1.FailoverEndedAutomatic} {
		cpv := waitForFailoverCPV(t, b, ns, name, func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
			h := cpv.Status.FailoverHistory
			return len(h) == 1 && h[0].End != nil
		})
		ep := cpv.Status.FailoverHistory[0]
		if ep.Cluster != typesv1beta1.ClusterName(failing) || ep.EndedBy != want || !ep.Start.Before(ep.End) ||
			name == "auto" && (ep.Replicas == nil || *ep.Replicas != 2) || name == "spread" && !slices.Equal(ep.Surge, []typesv1beta1.ClusterName{"fo-b"}) {
			t.Errorf("%s's failover ledger: %+v; want one episode of %s, ended %s, with its replicas or surge", name, ep, failing, want)
		}
	}

	phase("surge copy gone, ledgers checked")
	// Manual: the copy is current and the count over, yet it waits.
	waitForConditionOf(t, b.Host, "FederatedDeployment", ns, "manual", typesv1beta1.FederatedFailedOver, metav1.ConditionTrue, typesv1beta1.ReasonFailedOver, "fedwarden failback")
	if got := placedReplicas(waitForFailoverCPV(t, b, ns, "manual", nil)); !maps.Equal(got, want(2, 1, 1)) {
		t.Errorf("manual before the command: %v; want fo-a 2, fo-b 1, and fo-c's 1 kept, failed over", got)
	}
	host := []string{"--host-kubeconfig", b.Fed.Host.Kubeconfig}
	if r := runFedwarden(t, append([]string{"failback", "fdeploy/steady", "-n", ns}, host...)...); r.code != 1 || !strings.Contains(r.stderr, "it has no failover policy") {
		t.Errorf("failback of a resource without a failover policy: want exit 1 saying so\n%s", r)
	}
	if r := runFedwarden(t, append([]string{"failback", "fdeploy/auto", "-n", ns}, host...)...); r.code != 1 || !strings.Contains(r.stderr, "its failback is Automatic") {
		t.Errorf("failback of a resource whose failback is Automatic: want exit 1 saying so\n%s", r)
	}
	if r := runFedwarden(t, append([]string{"failback", "fdeploy/manual", "-n", ns, "--cluster", "fo-a"}, host...)...); r.code != 1 || !strings.Contains(r.stderr, "cluster fo-a is not failed over") {
		t.Errorf("failback of a cluster that is not failed over: want exit 1 saying so\n%s", r)
	}
	r := runFedwarden(t, append([]string{"failback", "fdeploy/manual", "-n", ns}, host...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "failback requested for cluster "+failing) {
		t.Fatalf("fedwarden failback: want exit 0\n%s", r)
	}
	waitForReady(t, b, ns, "manual", want(1, 1, 1))
	waitForFailoverCPV(t, b, ns, "manual", func(cpv *typesv1beta1.ClusterPropagatedVersion) bool {
		h := cpv.Status.FailoverHistory
		return len(h) == 1 && h[0].EndedBy == typesv1beta1.FailoverEndedManual
	})

	phase("manual failed back on the command")
	// An outage of every member moves nothing, however long it lasts.
	var all []*frozenCluster
	for _, m := range failoverMembers {
		all = append(all, frozenMember(t, b, m))
	}
	for _, f := range all {
		f.freeze(t)
	}
	for _, m := range failoverMembers {
		waitForCondition(t, b.Host, m, corev1beta1.ClusterReady, metav1.ConditionFalse, corev1beta1.ReasonClusterUnreachable, hungProbes.failedWithin())
	}
	phase("every member not Ready")
	// Past the toleration, and two resyncs more, every member still down.
	time.Sleep(8*time.Second + 2*5*time.Second)
	for _, name := range []string{"auto", "manual"} {
		cpv := waitForFailoverCPV(t, b, ns, name, nil)
		if got := placedReplicas(cpv); slices.ContainsFunc(failoverMembers, func(m string) bool { return failedOverAt(cpv, m) != nil }) ||
			!maps.Equal(got, map[string]map[string]int32{"auto": want(2, 2, 2), "manual": want(1, 1, 1)}[name]) {
			t.Errorf("%s after every member was not Ready for longer than the toleration: %v, %+v; want nothing failed over or moved", name, got, cpv.Spec.Clusters)
		}
	}
	for _, f := range all {
		f.thaw(t)
	}
}

// spreadDeployment is a kwokDeployment in one cluster per region of the
// failover bed's members, under the failover policy given.
func spreadDeployment(name, ns, failover string) string {
	return kwokDeployment(name, ns, "    clusterSelector: {}\n    spreadConstraints: [{spreadBy: region, maxClustersPerGroup: 1}]\n    failover: "+failover)
}

// setRegion sets the region of member's FederatedCluster.
func setRegion(t *testing.T, b *fedtest.Bed, member, region string) {
	t.Helper()
	fc := &corev1beta1.FederatedCluster{}
	if err := b.Host.Get(t.Context(), types.NamespacedName{Name: member}, fc); err != nil {
		t.Fatal(err)
	}
	before := fc.DeepCopy()
	fc.Spec.Region = region
	if err := b.Host.Patch(t.Context(), fc, client.MergeFrom(before)); err != nil {
		t.Fatalf("setting the region of %s: %v", member, err)
	}
}

// surges are the clusters cpv's decision chose as surges.
func surges(cpv *typesv1beta1.ClusterPropagatedVersion) []string {
	var out []string
	for _, pc := range cpv.Spec.Clusters {
		if pc.Surge {
			out = append(out, string(pc.Name))
		}
	}
	return out
}

// frozenCluster is a member whose API server a test freezes.
type frozenCluster struct {
	c    *localfed.Cluster
	done bool
}

func frozenMember(t *testing.T, b *fedtest.Bed, name string) *frozenCluster {
	t.Helper()
	i := slices.IndexFunc(b.Fed.Members, func(c *localfed.Cluster) bool { return c.Name == name })
	if i < 0 {
		t.Fatalf("no member %s", name)
	}
	f := &frozenCluster{c: b.Fed.Members[i], done: true}
	t.Cleanup(func() {
		if !f.done {
			_ = f.c.Thaw()
		}
	})
	return f
}

func (f *frozenCluster) freeze(t *testing.T) {
	t.Helper()
	if err := f.c.Freeze(); err != nil {
		t.Fatal(err)
	}
	f.done = false
}

func (f *frozenCluster) thaw(t *testing.T) {
	t.Helper()
	if err := f.c.Thaw(); err != nil {
		t.Fatal(err)
	}
	f.done = true
}

// waitForReady waits until each member named runs Deployment ns/name at
// the replicas given, all of them ready.
func waitForReady(t *testing.T, b *fedtest.Bed, ns, name string, want map[string]int32) {
	t.Helper()
	poll.Eventually(t, 2*time.Minute, fmt.Sprintf("%s/%s ready at %v", ns, name, want), func(ctx context.Context) (bool, string) {
		got := map[string]string{}
		ok := true
		for m, n := range want {
			d := &appsv1.Deployment{}
			if err := b.Members[m].Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
				got[m], ok = err.Error(), false
				continue
			}
			got[m] = fmt.Sprintf("%d wanted, %d ready", *d.Spec.Replicas, d.Status.ReadyReplicas)
			ok = ok && *d.Spec.Replicas == n && d.Status.ReadyReplicas == n && d.Status.Replicas == n
		}
		return ok, fmt.Sprint(got)
	})
}

// bedDeployment reads Deployment ns/name in member of b.
func bedDeployment(t *testing.T, b *fedtest.Bed, member, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := b.Members[member].Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, d); err != nil {
		t.Fatalf("reading %s's Deployment %s/%s: %v", member, ns, name, err)
	}
	return d
}

// waitForFailoverCPV waits for the CPV of FederatedDeployment ns/name to satisfy ok
// (any, when nil), and returns it.
func waitForFailoverCPV(t *testing.T, b *fedtest.Bed, ns, name string, ok func(*typesv1beta1.ClusterPropagatedVersion) bool) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	poll.Eventually(t, time.Minute, "the CPV of "+name, func(ctx context.Context) (bool, string) {
		var err error
		cpv, err = cpvOf(ctx, b.Host, ns, "deployment-"+name)
		if err != nil {
			return false, err.Error()
		}
		return ok == nil || ok(cpv), fmt.Sprintf("%+v", cpv.Spec.Clusters)
	})
	return cpv
}

func failedOverAt(cpv *typesv1beta1.ClusterPropagatedVersion, cluster string) *metav1.Time {
	for _, pc := range cpv.Spec.Clusters {
		if string(pc.Name) == cluster {
			return pc.FailedOverAt
		}
	}
	return nil
}

// placedReplicas are the replicas cpv's decision gives each cluster.
func placedReplicas(cpv *typesv1beta1.ClusterPropagatedVersion) map[string]int32 {
	out := map[string]int32{}
	for _, pc := range cpv.Spec.Clusters {
		if pc.Replicas != nil {
			out[string(pc.Name)] = *pc.Replicas
		}
	}
	return out
}
