package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/notify"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestRolloutInWavesHoldsAPullCluster rolls a FederatedConfigMap out in
// two waves, a Push cluster first and a Pull cluster second, the second
// awaiting an approval. The Pull cluster's agent, which may not read
// ControllerRevisions, stays at the earlier revision the host hands it in
// the CPV (not drift), heals a hand edit to that revision, never to the
// new one, notifies the heal to its own sink, and takes the new one once
// the wave is approved.
func TestRolloutInWavesHoldsAPullCluster(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startPullBed(t)
	// The agent sends its cluster's drift notifications (the host sends
	// none for a Pull cluster): started again with a sink on 127.0.0.1.
	receiver := newCloudEventReceiver(t)
	if err := b.agent.Stop(); err != nil {
		t.Fatal(err)
	}
	b.startAgent(t, "--notify-webhook", receiver.URL)
	if r := runFedwarden(t, "enable", "configmaps", "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("enable configmaps failed:\n%s", r)
	}
	waitForTypeConfigState(t, b.host, "configmaps", corev1beta1.ControllerStatusRunning, corev1beta1.ReasonControllerRunning, 30*time.Second)
	ns := testNamespace(t, b.host)
	createObject(t, b.host, decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: app, namespace: %s}
spec:
  template:
    data: {greeting: v1}
  placement: {clusters: [{name: %s}, {name: %s}]}
  rollout:
    strategy: Waves
    waves:
    - {name: push, clusters: [%s]}
    - {name: pull, clusters: [%s], pause: true}
`, ns, b.push.Name, b.pull.Name, b.push.Name, b.pull.Name)))
	push, pull := newClient(t, b.push.Config), newClient(t, b.pull.Config)
	greetings := func(ctx context.Context) (string, string) {
		var out [2]string
		for i, m := range []client.Client{push, pull} {
			cm := &corev1.ConfigMap{}
			if err := m.Get(ctx, types.NamespacedName{Namespace: ns, Name: "app"}, cm); err != nil {
				out[i] = "(" + err.Error() + ")"
				continue
			}
			out[i] = cm.Data["greeting"]
		}
		return out[0], out[1]
	}
	waitGreetings := func(push, pull string) {
		t.Helper()
		poll.Eventually(t, 60*time.Second, fmt.Sprintf("greetings %s (Push) and %s (Pull)", push, pull), func(ctx context.Context) (bool, string) {
			p, q := greetings(ctx)
			return p == push && q == pull, fmt.Sprintf("%s and %s", p, q)
		})
	}
	// A first revision goes everywhere at once.
	waitGreetings("v1", "v1")
	waitForEntry(t, b.host, ns, "configmap-app", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.InSync && cv.TargetRevision == 1
	})

	patch := func(greeting string) {
		t.Helper()
		kubectl(t, b.Host.Kubeconfig, "-n", ns, "patch", "federatedconfigmap", "app", "--type=merge", "-p", fmt.Sprintf(`{"spec":{"template":{"data":{"greeting":%q}}}}`, greeting))
	}
	// Every greeting the Pull cluster's copy ever has, from its watch: the
	// agent sees v2 in the resource before the host has decided to hold
	// its cluster, and must not apply it meanwhile.
	seen := watchGreetings(t, b.pull.Config, ns, "app")
	patch("v2")
	waitGreetings("v2", "v1")
	held := waitForEntry(t, b.host, ns, "configmap-app", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.RolloutPending
	})
	if held.TargetRevision != 1 || held.TemplateVersion != "1" {
		t.Errorf("the Pull cluster's entry while its wave awaits approval = %+v; want RolloutPending at revision 1, template version 1", held)
	}
	cpv, err := cpvOf(t.Context(), b.host, ns, "configmap-app")
	if err != nil {
		t.Fatal(err)
	}
	if cpv.Spec.Rollout == nil || cpv.Spec.Rollout.Latest.Number != 2 || len(cpv.Spec.Rollout.Held) != 1 || cpv.Spec.Rollout.Held[0].Number != 1 {
		t.Errorf("the CPV's spec.rollout = %+v; want latest 2 and revision 1 held for the Pull cluster", cpv.Spec.Rollout)
	}
	if *cpv.Status.DriftedClusters != 0 {
		t.Errorf("the CPV counts %d drifted clusters; a held cluster is not drift", *cpv.Status.DriftedClusters)
	}
	if r := runFedwarden(t, "drift", "-n", ns, "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 || strings.Contains(r.stdout, b.pull.Name) {
		t.Errorf("fedwarden drift lists the held Pull cluster:\n%s", r)
	}

	t.Run("a hand edit in the held Pull cluster is healed to its own revision", func(t *testing.T) {
		kubectl(t, b.pull.Kubeconfig, "-n", ns, "patch", "configmap", "app", "--type=merge", "-p", `{"data":{"greeting":"edited by hand"}}`)
		waitForEntry(t, b.host, ns, "configmap-app", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool {
			n := len(cv.DriftHistory)
			return n > 0 && cv.DriftHistory[n-1].ResolvedBy == typesv1beta1.ResolvedByEnforce && cv.State == typesv1beta1.RolloutPending
		})
		waitGreetings("v2", "v1")
		e := receiver.waitFor(t, notify.Healed, ns, "app")
		if d := e.event.Data; d.Cluster != b.pull.Name || d.State != typesv1beta1.ModifiedOutOfBand || d.TemplateVersion != "1" ||
			d.ResolvedBy != typesv1beta1.ResolvedByEnforce || !slices.Contains(d.Managers, "kubectl-patch") {
			t.Errorf("the agent's notification of the heal: %+v; want %s ModifiedOutOfBand by kubectl-patch, healed by Enforce at template version 1 (its held revision)", d, b.pull.Name)
		}
	})

	if got := seen(); slices.Contains(got, "v2") {
		t.Errorf("the held Pull cluster's copy had v2 before its wave was approved: greetings %v", got)
	}

	t.Run("once its wave is approved the Pull cluster takes the new revision", func(t *testing.T) {
		r := runFedwarden(t, "rollout", "resume", "federatedconfigmap/app", "-n", ns, "--host-kubeconfig", b.Host.Kubeconfig)
		if r.code != 0 || !strings.Contains(r.stdout, "approved wave pull") {
			t.Fatalf("fedwarden rollout resume:\n%s", r)
		}
		waitGreetings("v2", "v2")
		waitForEntry(t, b.host, ns, "configmap-app", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.InSync && cv.TargetRevision == 2 && cv.TemplateVersion == "2"
		})
		poll.Eventually(t, 30*time.Second, "the CPV to hold no revision for the Pull cluster", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, b.host, ns, "configmap-app")
			if err != nil {
				return false, err.Error()
			}
			return cpv.Spec.Rollout != nil && len(cpv.Spec.Rollout.Held) == 0, fmt.Sprintf("%+v", cpv.Spec.Rollout)
		})
	})
}

// watchGreetings watches the ConfigMap namespace/name in the cluster of cfg
// until the test ends; the function returned gives the greetings its
// watch has delivered so far, in order.
func watchGreetings(t *testing.T, cfg *rest.Config, namespace, name string) func() []string {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.Watch(t.Context(), &corev1.ConfigMapList{}, client.InNamespace(namespace), client.MatchingFields{"metadata.name": name})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	go func() {
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				mu.Lock()
				seen = append(seen, cm.Data["greeting"])
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(w.Stop)
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
