package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/registration"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// Lease settings of the pull bed's agent: an agent that stops is noticed
// within seconds, and one starved of CPU for a quarter of a minute is not
// taken for stopped.
const (
	pullLeaseDuration = 20 * time.Second
	pullRenewInterval = 2 * time.Second
)

// pullBed is a federation of one Push and one Pull member. The host has no
// credentials for the Pull member: only the agent, running with the
// identities `fedwarden join --sync-mode Pull` created (on the host) and
// applied (in the member), writes there.
type pullBed struct {
	*localfed.Federation
	bed        *fedtest.Bed
	host       client.Client
	push, pull *localfed.Cluster
	// agentHost is the agent's kubeconfig of the host.
	agentHost string
	agent     *fedtest.ControllerManager
}

// startPullBed starts the bed, joins both members, enables Deployments and
// starts the agent. The members run no deployment controller: a member
// resourceVersion that moves is a Fedwarden write.
func startPullBed(t *testing.T) *pullBed {
	t.Helper()
	// No leader election: the host is stopped for 30 s, longer than a
	// leader may go without renewing.
	fb, _ := startJoinedBed(t, fedtest.Options{
		Federation: []localfed.Option{localfed.WithMemberNames("push-1", "pull-1"), localfed.WithControllers(fedtest.JoinControllers...)},
		Pull:       []string{"pull-1"},
		AgentArgs:  []string{"--lease-duration", pullLeaseDuration.String(), "--lease-renew-interval", pullRenewInterval.String(), "--resync-period", "5s"},
	}, steadyProbes, "--resync-period", "5s", "--leader-elect=false", "--propagate-dependencies")
	b := &pullBed{Federation: fb.Fed, bed: fb, host: fb.Host, push: fb.Fed.Members[0], pull: fb.Fed.Members[1],
		agentHost: fb.AgentHostKubeconfig("pull-1"), agent: fb.Agents["pull-1"]}
	enableDeploymentsIn(t, b.host)
	return b
}

// startAgent starts the agent again, with the same flags and more, and
// waits until the host sees the Pull cluster Ready from its Lease. The
// agent runs until the bed's test ends.
func (b *pullBed) startAgent(t *testing.T, more ...string) {
	t.Helper()
	b.agent = b.bed.StartAgent(t, b.pull.Name, more...)
}

// waitForReady waits until the Pull cluster's Ready condition has status
// and reason.
func (b *pullBed) waitForReady(t *testing.T, status metav1.ConditionStatus, reason string) *corev1beta1.FederatedCluster {
	t.Helper()
	fc := &corev1beta1.FederatedCluster{}
	// A verdict comes at the latest when the Lease expires.
	poll.Eventually(t, pullLeaseDuration+loadSlack, fmt.Sprintf("%s to be Ready=%s (%s)", b.pull.Name, status, reason), func(ctx context.Context) (bool, string) {
		if err := b.host.Get(ctx, types.NamespacedName{Name: b.pull.Name}, fc); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(fc.Status.Conditions, corev1beta1.ClusterReady)
		return c != nil && c.Status == status && c.Reason == reason, fmt.Sprintf("%+v", fc.Status)
	})
	return fc
}

// waitForRenewalSince waits until the agent has renewed its Lease on the
// host after since.
func (b *pullBed) waitForRenewalSince(t *testing.T, since time.Time) {
	t.Helper()
	key := types.NamespacedName{Namespace: corev1beta1.DefaultFederationNamespace, Name: registration.AgentLeaseName(b.pull.Name)}
	poll.Eventually(t, pullLeaseDuration+loadSlack, fmt.Sprintf("the agent to renew its Lease %s after %s", key, since.Format(time.RFC3339Nano)), func(ctx context.Context) (bool, string) {
		lease := &coordinationv1.Lease{}
		if err := b.host.Get(ctx, key, lease); err != nil {
			return false, err.Error()
		}
		renewed := lease.Spec.RenewTime
		return renewed != nil && renewed.After(since), fmt.Sprintf("renewed at %v", renewed)
	})
}

// memberImages returns the image of Deployment namespace/name in each
// member, "" where there is none.
func (b *pullBed) memberImage(ctx context.Context, m *localfed.Cluster, namespace, name string) (string, error) {
	c, err := client.New(m.Config, client.Options{})
	if err != nil {
		return "", err
	}
	img, err := memberImage(ctx, c, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	return img, err
}

// waitForImages waits until the push and the pull member have Deployment
// namespace/name with these images ("" for none).
func (b *pullBed) waitForImages(t *testing.T, namespace, name, push, pull string) {
	t.Helper()
	poll.Eventually(t, 30*time.Second, fmt.Sprintf("images %q (push) and %q (pull) of %s/%s", push, pull, namespace, name), func(ctx context.Context) (bool, string) {
		a, errA := b.memberImage(ctx, b.push, namespace, name)
		p, errP := b.memberImage(ctx, b.pull, namespace, name)
		return errA == nil && errP == nil && a == push && p == pull, fmt.Sprint(a, errA, p, errP)
	})
}

// entryManagers returns, per cluster entry of the CPV, the field managers
// that own fields of it.
func entryManagers(t *testing.T, c client.Client, namespace, name string) map[string][]string {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, cpv); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, mf := range cpv.ManagedFields {
		if mf.FieldsV1 == nil || mf.Subresource != "status" {
			continue
		}
		var fields map[string]any
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &fields); err != nil {
			t.Fatal(err)
		}
		status, _ := fields["f:status"].(map[string]any)
		entries, _ := status["f:clusterVersions"].(map[string]any)
		for key := range entries {
			// k:{"clusterName":"pull-1"}
			var k struct {
				ClusterName string `json:"clusterName"`
			}
			if raw, ok := strings.CutPrefix(key, "k:"); ok && json.Unmarshal([]byte(raw), &k) == nil {
				out[k.ClusterName] = append(out[k.ClusterName], mf.Manager)
			}
		}
	}
	return out
}

// TestPullMode runs a federation of one Push and one Pull member. The Pull
// member's agent receives, updates and deletes resources, heals drift in
// its cluster, writes only its own CPV entry (the host's admission policy
// denies it the other's), restarts without writing, and keeps its cluster
// as it is while the host is down.
func TestPullMode(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	b := startPullBed(t)
	fc := &corev1beta1.FederatedCluster{}
	if err := b.host.Get(t.Context(), types.NamespacedName{Name: b.pull.Name}, fc); err != nil {
		t.Fatal(err)
	}
	if fc.Spec.SecretRef != nil || fc.Spec.SyncMode != corev1beta1.SyncModePull {
		t.Fatalf("the Pull cluster must have no credentials on the host: %+v", fc.Spec)
	}
	if fc.Status.KubernetesVersion == "" {
		t.Errorf("the agent's Lease did not publish the member's Kubernetes version: %+v", fc.Status)
	}
	ns := testNamespace(t, b.host)
	cpvName := "deployment-web"

	t.Run("receives, updates and deletes", func(t *testing.T) {
		createObject(t, b.host, newFederatedDeployment(t, ns, "web", 1, placedOn(b.push.Name, b.pull.Name)))
		cpv := waitForCPV(t, b.host, ns, cpvName, "1", "1", b.pull.Name, b.push.Name)
		for _, name := range []string{b.push.Name, b.pull.Name} {
			if _, ok := cpv.Labels[typesv1beta1.LabelPlacedPrefix+name]; !ok {
				t.Errorf("the CPV has no label placed.fedwarden.io/%s: %v", name, cpv.Labels)
			}
		}
		if cpv.Spec.TemplateResource != "federateddeployments" {
			t.Errorf("CPV spec.templateResource = %q, want federateddeployments", cpv.Spec.TemplateResource)
		}
		b.waitForImages(t, ns, "web", "nginx:1.27", "nginx:1.27")
		managers := entryManagers(t, b.host, ns, cpvName)
		if got := managers[b.pull.Name]; !slices.Equal(got, []string{registration.AgentFieldManager(b.pull.Name)}) {
			t.Errorf("the Pull cluster's entry is owned by %v, want only its agent", got)
		}
		if got := managers[b.push.Name]; slices.Contains(got, registration.AgentFieldManager(b.pull.Name)) {
			t.Errorf("the agent owns fields of the Push cluster's entry: %v", got)
		}

		patchFederated(t, b.host, ns, "web", setImage(t, "nginx:1.28"))
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.pull.Name, b.push.Name)
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")

		patchFederated(t, b.host, ns, "web", func(obj *unstructured.Unstructured) {
			setNested(t, obj.Object, []any{map[string]any{"name": b.push.Name}}, "spec", "placement", "clusters")
		})
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.push.Name)
		b.waitForImages(t, ns, "web", "nginx:1.28", "")

		patchFederated(t, b.host, ns, "web", func(obj *unstructured.Unstructured) {
			setNested(t, obj.Object, []any{map[string]any{"name": b.push.Name}, map[string]any{"name": b.pull.Name}}, "spec", "placement", "clusters")
		})
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.pull.Name, b.push.Name)
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")

		createObject(t, b.host, newFederatedDeployment(t, ns, "gone", 1, placedOn(b.push.Name, b.pull.Name)))
		waitForCPV(t, b.host, ns, "deployment-gone", "1", "1", b.pull.Name, b.push.Name)
		gone := newFederatedDeployment(t, ns, "gone", 1, "")
		if err := b.host.Delete(t.Context(), gone); err != nil {
			t.Fatal(err)
		}
		b.waitForImages(t, ns, "gone", "", "")
		poll.Eventually(t, 30*time.Second, "the FederatedDeployment to be deleted", func(ctx context.Context) (bool, string) {
			err := b.host.Get(ctx, client.ObjectKeyFromObject(gone), gone)
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
	})

	t.Run("dependencies reach the Pull cluster through its agent", func(t *testing.T) {
		for _, resource := range []string{"configmaps", "secrets"} {
			if r := runFedwarden(t, "enable", resource, "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 {
				t.Fatalf("fedwarden enable %s:\n%s", resource, r)
			}
		}
		pull, push := newClient(t, b.pull.Config), newClient(t, b.push.Config)
		value := randomValue(t)
		createObject(t, b.host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}, Data: map[string]string{"mode": "blue"}})
		createObject(t, b.host, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deps-secret"}, StringData: map[string]string{"password": value}})
		firstWrites := watchFirstWrites(t, b.pull.Config, ns)
		createObject(t, b.host, dependentDeployment(t, ns, "deps", "web-config", "", "deps-secret", b.push.Name, b.pull.Name))
		for name, c := range map[string]client.Client{b.pull.Name: pull, b.push.Name: push} {
			waitForMemberConfigMap(t, c, name, ns, "web-config", "blue")
			waitForMemberObject(t, c, name, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deps-secret"}}, func(o client.Object) bool {
				return string(o.(*corev1.Secret).Data["password"]) == value
			})
			waitForEntry(t, b.host, ns, "configmap-web-config", name, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.InSync })
		}
		// The agent wrote the dependencies before the workload.
		waitForMemberObject(t, pull, b.pull.Name, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deps"}}, nil)
		firstWrites.checkBefore(t, "Deployment/deps", "ConfigMap/web-config", "Secret/deps-secret")
		// The agent wrote the Pull cluster's entries of the dependencies.
		if got := entryManagers(t, b.host, ns, "secret-deps-secret")[b.pull.Name]; !slices.Equal(got, []string{registration.AgentFieldManager(b.pull.Name)}) {
			t.Errorf("the Pull cluster's entry of the Secret is owned by %v, want only its agent", got)
		}
		patchHost(t, b.host, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, `{"data":{"mode":"green"}}`)
		waitForMemberConfigMap(t, pull, b.pull.Name, ns, "web-config", "green")
		patchHost(t, pull, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, `{"data":{"mode":"by-hand"}}`)
		waitForMemberConfigMap(t, pull, b.pull.Name, ns, "web-config", "green")

		// The workload leaves the Pull cluster: so do its dependencies,
		// which the agent deletes.
		patchFederated(t, b.host, ns, "deps", func(obj *unstructured.Unstructured) {
			setNested(t, obj.Object, []any{map[string]any{"name": b.push.Name}}, "spec", "placement", "clusters")
		})
		waitForAbsent(t, pull, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, b.pull.Name, settleWithin)
		waitForAbsent(t, pull, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deps-secret"}}, b.pull.Name, settleWithin)
		waitForMemberConfigMap(t, push, b.push.Name, ns, "web-config", "green")
		if err := b.host.Delete(t.Context(), dependentDeployment(t, ns, "deps", "", "", "")); err != nil {
			t.Fatal(err)
		}
		waitForAbsent(t, push, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-config"}}, b.push.Name, settleWithin)
	})

	t.Run("drift in the Pull cluster is healed by its agent", func(t *testing.T) {
		member := newClient(t, b.pull.Config)
		editImage(t, member, ns, "web", "nginx:evil")
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
		// The agent records its Events in the control-plane namespace.
		waitForEvent(t, b.host, corev1beta1.DefaultFederationNamespace, "web", typesv1beta1.EventDriftDetected, b.pull.Name, "ModifiedOutOfBand", imagePath, "kubectl-edit", "re-applied")
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.pull.Name, b.push.Name)
		// The agent keeps the drift ledger of its own entry.
		entry := waitForEntry(t, b.host, ns, cpvName, b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool { return len(cv.DriftHistory) > 0 })
		if ep := entry.DriftHistory[len(entry.DriftHistory)-1]; ep.ResolvedBy != typesv1beta1.ResolvedByEnforce || ep.State != typesv1beta1.ModifiedOutOfBand || !slices.Equal(ep.ChangedBy, []string{"kubectl-edit"}) {
			t.Errorf("the Pull cluster's last drift episode = %+v; want ModifiedOutOfBand by kubectl-edit, resolved by Enforce", ep)
		}
		// The agent judges its copy's health too.
		waitForEntry(t, b.host, ns, cpvName, b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool { return cv.Health != "" && cv.HealthReason != "" })
		// diff cannot read the Pull member: it says what its agent reported.
		r := runFedwarden(t, "diff", "fdeploy/web", "-n", ns, "--host-kubeconfig", b.Host.Kubeconfig)
		if r.code != 0 || !strings.Contains(r.stderr, b.pull.Name+": Pull cluster, not read from the host; its agent reports InSync at template version 2") {
			t.Errorf("fedwarden diff with a Pull member:\n%s", r)
		}
	})

	t.Run("a resync re-applies the Pull cluster's copy once", func(t *testing.T) {
		before, _, err := b.agent.Sum(t.Context(), "fedwarden_member_writes_total")
		if err != nil {
			t.Fatal(err)
		}
		const value = "pull-resync-1"
		patchFederated(t, b.host, ns, "web", func(obj *unstructured.Unstructured) {
			annotations := obj.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[typesv1beta1.AnnotationResync] = value
			obj.SetAnnotations(annotations)
		})
		waitForEntry(t, b.host, ns, cpvName, b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool { return cv.Resync == value })
		// The agent syncs again at its own entry's write and every 5 s:
		// none of those syncs acts on the value a second time.
		deadline := time.Now().Add(15 * time.Second)
		poll.Eventually(t, 30*time.Second, "three of the agent's resync periods", func(context.Context) (bool, string) {
			return time.Now().After(deadline), ""
		})
		after, _, err := b.agent.Sum(t.Context(), "fedwarden_member_writes_total")
		if err != nil {
			t.Fatal(err)
		}
		if after-before != 1 {
			t.Errorf("the agent wrote its cluster %v times for one resync, want once", after-before)
		}
	})

	t.Run("an agent cannot write another cluster's entry", func(t *testing.T) {
		agent := agentHostClient(t, b.agentHost)
		entry := map[string]any{"clusterName": b.push.Name, "state": "Missing"}
		err := applyEntry(t.Context(), agent, ns, cpvName, registration.AgentFieldManager(b.pull.Name), entry)
		if err == nil || !strings.Contains(err.Error(), "fedwarden-agent-isolation") {
			t.Fatalf("the agent of %s wrote %s's entry: err = %v, want a denial by the fedwarden-agent-isolation policy", b.pull.Name, b.push.Name, err)
		}
		// Its own entry, as it is, it may apply.
		cpv, err := cpvOf(t.Context(), b.host, ns, cpvName)
		if err != nil {
			t.Fatal(err)
		}
		own, found := map[string]any{}, false
		for _, cv := range cpv.Status.ClusterVersions {
			if string(cv.ClusterName) == b.pull.Name {
				if own, err = runtime.DefaultUnstructuredConverter.ToUnstructured(&cv); err != nil {
					t.Fatal(err)
				}
				found = true
			}
		}
		if !found {
			t.Fatalf("no entry of %s: %+v", b.pull.Name, cpv.Status)
		}
		if err := applyEntry(t.Context(), agent, ns, cpvName, registration.AgentFieldManager(b.pull.Name), own); err != nil {
			t.Errorf("the agent may write its own entry, but: %v", err)
		}
		other := &corev1beta1.FederatedCluster{}
		if err := agent.Get(t.Context(), types.NamespacedName{Name: b.push.Name}, other); err == nil {
			other.Labels = map[string]string{"stolen": "true"}
			err = agent.Update(t.Context(), other)
			if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
				t.Errorf("the agent updated FederatedCluster %s: err = %v, want forbidden", b.push.Name, err)
			}
		} else if !apierrors.IsForbidden(err) {
			t.Errorf("reading FederatedCluster %s as the agent: %v", b.push.Name, err)
		}
	})

	t.Run("an agent restart writes nothing to the member", func(t *testing.T) {
		before := pullVersions(t, b.pull, ns)
		if err := b.agent.Stop(); err != nil {
			t.Fatal(err)
		}
		b.startAgent(t)
		poll.Eventually(t, 30*time.Second, "the new agent to sync web", func(ctx context.Context) (bool, string) {
			n, _, err := b.agent.Sum(ctx, "controller_runtime_reconcile_total", `controller="agent-deployments.apps"`)
			return err == nil && n >= 1, fmt.Sprint(n, err)
		})
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.pull.Name, b.push.Name)
		writes, _, err := b.agent.Sum(t.Context(), "fedwarden_member_writes_total")
		if err != nil {
			t.Fatal(err)
		}
		if writes != 0 {
			t.Errorf("the restarted agent made %v writes to its cluster, want 0", writes)
		}
		if after := pullVersions(t, b.pull, ns); !maps.Equal(before, after) {
			t.Errorf("member Deployments changed across the agent's restart: before %v, after %v", before, after)
		}
	})

	t.Run("a waiver that selects the Pull cluster by label keeps its edit", func(t *testing.T) {
		// The agent judges the selector on its own FederatedCluster's
		// labels, the one FederatedCluster it may read.
		waiver := fmt.Sprintf("  driftPolicy: {waivers: [{clusterSelector: {matchLabels: {%s: %s}}, paths: [%s], expires: '%s', reason: pull maintenance}]}",
			corev1beta1.LabelCluster, b.pull.Name, imagePath, time.Now().Add(10*time.Minute).UTC().Format(time.RFC3339))
		createObject(t, b.host, newFederatedDeployment(t, ns, "waived", 1, placedOn(b.push.Name, b.pull.Name)+"\n"+waiver))
		waitForCPV(t, b.host, ns, "deployment-waived", "1", "1", b.pull.Name, b.push.Name)
		editImage(t, newClient(t, b.pull.Config), ns, "waived", "nginx:hotfix")
		editImage(t, newClient(t, b.push.Config), ns, "waived", "nginx:hotfix")
		entry := waitForEntry(t, b.host, ns, "deployment-waived", b.pull.Name, func(cv typesv1beta1.ClusterVersion) bool { return cv.State == typesv1beta1.Waived })
		if entry.Waiver == nil || entry.Waiver.Reason != "pull maintenance" || !strings.Contains(entry.Message, "pull maintenance") {
			t.Errorf("the Pull cluster's Waived entry: %+v; want the waiver recorded", entry)
		}
		// The label selects the Pull cluster only: the Push cluster's edit
		// is healed.
		b.waitForImages(t, ns, "waived", "nginx:1.27", "nginx:hotfix")
		own := &corev1beta1.FederatedCluster{}
		if err := agentHostClient(t, b.agentHost).Get(t.Context(), types.NamespacedName{Name: b.pull.Name}, own); err != nil {
			t.Errorf("the agent reading its own FederatedCluster: %v", err)
		}
		// The host cannot read a Pull member's values: codify says so, and
		// what to do instead, and writes nothing.
		r := runFedwarden(t, "drift", "codify", "fdeploy/waived", "-n", ns, "--cluster", b.pull.Name, "--host-kubeconfig", b.Host.Kubeconfig)
		if r.code != 1 || !strings.Contains(r.stderr, "cluster "+b.pull.Name+" is a Pull cluster") || !strings.Contains(r.stderr, "fedwarden drift waive") {
			t.Errorf("drift codify of a Pull cluster: want exit 1 saying it is a Pull cluster and what to do instead\n%s", r)
		}
		fed := &unstructured.Unstructured{}
		fed.SetGroupVersionKind(typesv1beta1.GroupVersion.WithKind("FederatedDeployment"))
		if err := b.host.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "waived"}, fed); err != nil || fed.GetGeneration() != 1 {
			t.Errorf("after the refused codify, the resource's generation is %d (%v); want 1, nothing written", fed.GetGeneration(), err)
		}
	})

	t.Run("a refusal quoting a Secret leaves no value", func(t *testing.T) {
		checkPullRefusalQuotingASecret(t, b, ns)
	})

	t.Run("host down: the member is kept and healed, and reported after", func(t *testing.T) {
		if err := b.Host.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		down := time.Now()
		member := newClient(t, b.pull.Config)
		editImage(t, member, ns, "web", "nginx:evil")
		poll.Eventually(t, 30*time.Second, "the agent to heal its cluster while the host is down", func(ctx context.Context) (bool, string) {
			img, err := b.memberImage(ctx, b.pull, ns, "web")
			return err == nil && img == "nginx:1.28", fmt.Sprint(img, err)
		})
		for time.Since(down) < 30*time.Second {
			img, err := b.memberImage(t.Context(), b.pull, ns, "web")
			if err != nil || img != "nginx:1.28" {
				t.Fatalf("the member's copy changed while the host was down: %q, %v", img, err)
			}
			time.Sleep(time.Second)
		}
		if err := fedtest.RestartCluster(t, b.Host); err != nil {
			t.Fatal(err)
		}
		// The Ready=True the host kept from before the outage proves
		// nothing: wait for a renewal made since, then Ready.
		b.waitForRenewalSince(t, time.Now())
		b.waitForReady(t, metav1.ConditionTrue, corev1beta1.ReasonAgentRenewing)
		waitForCPV(t, b.host, ns, cpvName, "2", "1", b.pull.Name, b.push.Name)
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
		waitForEvent(t, b.host, corev1beta1.DefaultFederationNamespace, "web", typesv1beta1.EventDriftResolved, b.pull.Name)
	})

	t.Run("an agent that stops makes its cluster not Ready", func(t *testing.T) {
		b.agent.Kill()
		fc := b.waitForReady(t, metav1.ConditionFalse, corev1beta1.ReasonAgentLeaseExpired)
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, corev1beta1.ClusterOffline) {
			t.Errorf("an agent whose Lease expired must make its cluster Offline: %+v", fc.Status.Conditions)
		}
		// Its copy stays: an outage moves or deletes nothing.
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
	})

	t.Run("a Pull cluster that leaves loses its CPV entry, and keeps its copy", func(t *testing.T) {
		// Without the member's kubeconfig: the host side only.
		r := runFedwarden(t, "unjoin", b.pull.Name, "--host-kubeconfig", b.Host.Kubeconfig)
		if r.code != 0 {
			t.Fatalf("unjoin of the Pull cluster's host side failed:\n%s", r)
		}
		// The entry goes at the resource's next sync after the unjoin, which
		// may be the retry (--propagation-retry-period, 30 s) rather than at
		// once: seen at 27-30 s on a loaded machine.
		poll.Eventually(t, 90*time.Second, "the left cluster's entry to be removed from the CPV", func(ctx context.Context) (bool, string) {
			cpv, err := cpvOf(ctx, b.host, ns, cpvName)
			if err != nil {
				return false, err.Error()
			}
			names := []string{}
			for _, cv := range cpv.Status.ClusterVersions {
				names = append(names, string(cv.ClusterName))
			}
			return slices.Equal(names, []string{b.push.Name}), fmt.Sprint(names)
		})
		b.waitForImages(t, ns, "web", "nginx:1.28", "nginx:1.28")
	})
}

// agentHostClient is a client of the host as the agent, from the kubeconfig
// join wrote.
func agentHostClient(t *testing.T, path string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return newClient(t, cfg)
}

// applyEntry applies one status.clusterVersions entry of a CPV as manager
// (nil: none, which removes what manager owned).
func applyEntry(ctx context.Context, c client.Client, namespace, name, manager string, entry map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": typesv1beta1.GroupVersion.String(), "kind": "ClusterPropagatedVersion",
		"metadata": map[string]any{"namespace": namespace, "name": name},
	}}
	if entry != nil {
		u.Object["status"] = map[string]any{"clusterVersions": []any{entry}}
	}
	return c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership)
}

// pullVersions returns the resourceVersion of every Deployment of
// namespace in m, by name.
func pullVersions(t *testing.T, m *localfed.Cluster, namespace string) map[string]string {
	t.Helper()
	list := &appsv1.DeploymentList{}
	if err := newClient(t, m.Config).List(t.Context(), list, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, d := range list.Items {
		out[d.Name] = d.ResourceVersion
	}
	return out
}
