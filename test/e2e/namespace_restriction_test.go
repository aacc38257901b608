package e2e

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
	"github.com/fedwarden/fedwarden/test/poll"
)

// nsBed is a test bed of its own for the tests that federate namespaces:
// in the shared bed, that would keep every other test's resources from
// their clusters. ConfigMaps are enabled; namespaces only when a test says.
type nsBed struct {
	*localfed.Federation
	bed     *fedtest.Bed
	host    client.Client
	members map[string]client.Client
	cm      *controllerManager
}

// startNamespaceBed starts a host and members members, each running only
// the controllers that create ServiceAccounts and finish deleting
// namespaces, a controller-manager, joins the members and enables
// ConfigMaps with the CLI.
func startNamespaceBed(t *testing.T, members int) *nsBed {
	t.Helper()
	fb, cm := startJoinedBed(t, fedtest.Options{Federation: []localfed.Option{localfed.WithMembers(members), localfed.WithControllers("serviceaccount-controller", "namespace-controller")}}, steadyProbes)
	bed := &nsBed{Federation: fb.Fed, bed: fb, host: fb.Host, members: fb.Members, cm: cm}
	bed.enable(t, "configmaps")
	return bed
}

// startControllerManager starts a controller-manager on the bed, stopped
// when the test ends.
func (b *nsBed) startControllerManager(t *testing.T) {
	t.Helper()
	b.cm = startControllerManager(t, b.bed, steadyProbes)
}

// enable runs `fedwarden enable resource` and waits until its propagation
// controller runs.
func (b *nsBed) enable(t *testing.T, resource string) {
	t.Helper()
	if r := runFedwarden(t, "enable", resource, "--host-kubeconfig", b.Host.Kubeconfig); r.code != 0 {
		t.Fatalf("enabling %s failed:\n%s", resource, r)
	}
	waitForTypeConfigState(t, b.host, resource, corev1beta1.ControllerStatusRunning, corev1beta1.ReasonControllerRunning, time.Minute+loadSlack)
}

// hostNamespace creates a namespace of the host.
func (b *nsBed) hostNamespace(t *testing.T, name string) {
	t.Helper()
	createObject(t, b.host, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// federatedConfigMap is a FederatedConfigMap; placement is YAML under spec.
func federatedConfigMap(t *testing.T, namespace, name, placement string) *unstructured.Unstructured {
	t.Helper()
	return decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedConfigMap
metadata: {name: %s, namespace: %s}
spec:
  template:
    data: {greeting: hello}
%s
`, name, namespace, placement))
}

// federatedNamespace is the FederatedNamespace name in namespace, adopting
// existing namespaces when adopt is set; placement is YAML under spec.
func federatedNamespace(t *testing.T, namespace, name string, adopt bool, placement string) *unstructured.Unstructured {
	t.Helper()
	obj := decode(t, fmt.Sprintf(`
apiVersion: types.kubefed.io/v1beta1
kind: FederatedNamespace
metadata: {name: %s, namespace: %s}
spec:
%s
`, name, namespace, placement))
	if adopt {
		obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationConflictResolution: typesv1beta1.ConflictResolutionAdopt})
	}
	return obj
}

// statusOf reads the status of a federated resource of kind.
func statusOf(ctx context.Context, c client.Client, kind, namespace, name string) (*unstructured.Unstructured, typesv1beta1.FederatedStatus, error) {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind(kind)
	var st typesv1beta1.FederatedStatus
	if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		return nil, st, err
	}
	if raw, found, _ := unstructured.NestedMap(obj.Object, "status"); found {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st); err != nil {
			return nil, st, err
		}
	}
	return obj, st, nil
}

// waitForConditionOf waits until the condition typ of a federated resource
// of kind, at its current generation, has status and reason and a message
// containing every one of parts, and returns its message.
func waitForConditionOf(t *testing.T, c client.Client, kind, namespace, name, typ string, status metav1.ConditionStatus, reason string, parts ...string) string {
	t.Helper()
	var msg string
	poll.Eventually(t, 45*time.Second+loadSlack, fmt.Sprintf("%s %s/%s: %s=%s (%s) saying %q", kind, namespace, name, typ, status, reason, parts), func(ctx context.Context) (bool, string) {
		obj, st, err := statusOf(ctx, c, kind, namespace, name)
		if err != nil {
			return false, err.Error()
		}
		cond := meta.FindStatusCondition(st.Conditions, typ)
		if cond == nil || st.ObservedGeneration != obj.GetGeneration() {
			return false, fmt.Sprintf("generation %d, status %+v", obj.GetGeneration(), st)
		}
		msg = cond.Message
		return cond.Status == status && cond.Reason == reason && !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(cond.Message, p) }),
			fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
	return msg
}

// configMapUID waits for a member's ConfigMap managed by Fedwarden and
// returns its UID.
func (b *nsBed) configMapUID(t *testing.T, member, namespace, name string) types.UID {
	t.Helper()
	var uid types.UID
	poll.Eventually(t, 45*time.Second+loadSlack, fmt.Sprintf("%s's ConfigMap %s/%s", member, namespace, name), func(ctx context.Context) (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := b.members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, cm); err != nil {
			return false, err.Error()
		}
		uid = cm.UID
		return cm.Labels[typesv1beta1.LabelManaged] == "true", fmt.Sprintf("labels %v", cm.Labels)
	})
	return uid
}

// checkConfigMap fails unless the member still has the ConfigMap of that
// UID, not being deleted.
func (b *nsBed) checkConfigMap(t *testing.T, member, namespace, name string, uid types.UID) {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := b.members[member].Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, cm); err != nil {
		t.Fatalf("%s's ConfigMap %s/%s: %v", member, namespace, name, err)
	}
	if cm.UID != uid || !cm.DeletionTimestamp.IsZero() {
		t.Fatalf("%s's ConfigMap %s/%s was replaced or is being deleted: UID %s (was %s), deletionTimestamp %v", member, namespace, name, cm.UID, uid, cm.DeletionTimestamp)
	}
}

// waitForNoConfigMap waits until the member has no ConfigMap of that name.
func (b *nsBed) waitForNoConfigMap(t *testing.T, member, namespace, name string) {
	t.Helper()
	poll.Eventually(t, 45*time.Second+loadSlack, fmt.Sprintf("%s's ConfigMap %s/%s to be deleted", member, namespace, name), func(ctx context.Context) (bool, string) {
		err := b.members[member].Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// resyncAndWait asks for a full sync of a FederatedConfigMap
// (kubefed.io/resync) and waits until its CPV says it was done: whatever
// that sync would delete is gone by then.
func (b *nsBed) resyncAndWait(t *testing.T, namespace, name string) {
	t.Helper()
	value := fmt.Sprintf("keep-%d", time.Now().UnixNano())
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedConfigMap")
	obj.SetNamespace(namespace)
	obj.SetName(name)
	obj.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: value})
	if err := b.host.Patch(t.Context(), obj, client.Merge); err != nil {
		t.Fatalf("annotating FederatedConfigMap %s/%s: %v", namespace, name, err)
	}
	poll.Eventually(t, 45*time.Second+loadSlack, "the resync of "+name+" to be done", func(ctx context.Context) (bool, string) {
		cpv, err := cpvOf(ctx, b.host, namespace, "configmap-"+name)
		if err != nil {
			return false, err.Error()
		}
		return cpv.Status.Resync == value, "resync " + cpv.Status.Resync
	})
}

// memberWrites is what the controller-manager has written to the members
// since it started (fedwarden_member_writes_total, all verbs).
func (cm *controllerManager) memberWrites(t *testing.T) float64 {
	t.Helper()
	v, _ := cm.series(t, "fedwarden_member_writes_total")
	return v
}

// waitForIdle waits until the propagation controllers of types have
// finished at least reconciles syncs in all and are steady: nothing queued
// or running, and no new sync or member write, over at least three scrapes
// spanning steadyFor (see waitForSteady).
func (cm *controllerManager) waitForIdle(t *testing.T, reconciles float64, types ...string) {
	t.Helper()
	var (
		last    string
		since   time.Time
		scrapes int
	)
	poll.Eventually(t, 2*time.Minute+loadSlack, fmt.Sprintf("the propagation controllers of %v to be idle for %s", types, steadyFor), func(ctx context.Context) (bool, string) {
		var done, depth, active float64
		var states []string
		for _, typ := range types {
			ctrl := fmt.Sprintf("controller=%q", "propagation-"+typ)
			d, _, err := cm.sum(ctx, "controller_runtime_reconcile_total", ctrl)
			q, okDepth, errDepth := cm.sum(ctx, "workqueue_depth", ctrl)
			a, okActive, errActive := cm.sum(ctx, "controller_runtime_active_workers", ctrl)
			if err := errors.Join(err, errDepth, errActive); err != nil {
				return false, err.Error()
			}
			if !okDepth || !okActive {
				return false, typ + ": no queue yet"
			}
			done, depth, active = done+d, depth+q, active+a
			states = append(states, fmt.Sprintf("%s: %v reconciles", typ, d))
		}
		writes, _, err := cm.sum(ctx, "fedwarden_member_writes_total")
		if err != nil {
			return false, err.Error()
		}
		state := fmt.Sprintf("%s; %v member writes, queue depth %v, active workers %v", strings.Join(states, ", "), writes, depth, active)
		if done < reconciles || depth != 0 || active != 0 {
			last = ""
			return false, state
		}
		if state != last {
			last, since, scrapes = state, time.Now(), 0
		}
		scrapes++
		return scrapes >= 3 && time.Since(since) >= steadyFor, fmt.Sprintf("%s, for %s", state, time.Since(since).Round(time.Millisecond))
	})
}

// memberState is the UID and resourceVersion of every ConfigMap of the
// namespaces, and of the namespaces themselves, in each member, by member
// and "namespace/name".
func (b *nsBed) memberState(t *testing.T, namespaces ...string) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for name, c := range b.members {
		out[name] = map[string]string{}
		for _, ns := range namespaces {
			var list corev1.ConfigMapList
			if err := c.List(t.Context(), &list, client.InNamespace(ns)); err != nil {
				t.Fatalf("listing ConfigMaps in %s: %v", name, err)
			}
			for _, cm := range list.Items {
				out[name][ns+"/"+cm.Name] = string(cm.UID) + "@" + cm.ResourceVersion
			}
			n := &corev1.Namespace{}
			switch err := c.Get(t.Context(), types.NamespacedName{Name: ns}, n); {
			case err == nil:
				out[name][ns] = string(n.UID) + "@" + n.ResourceVersion
			case !apierrors.IsNotFound(err):
				t.Fatal(err)
			}
		}
	}
	return out
}

// `fedwarden enable namespaces` on a live federation: a FederatedConfigMap
// propagated to both members of a namespace that has no FederatedNamespace
// keeps both copies (same UIDs, through a full sync), and says why
// (Scheduled, reason CopiesKept, and an Event); a new one there goes
// nowhere, and says so. Then the user's FederatedNamespace, placed on
// member-1, is intent: member-2's copy goes, member-1's stays, and the new
// one reaches member-1. Last, plan of a new FederatedNamespace with a
// resource of its namespace places both as the controller then does.
func TestEnablingNamespacesReportsAndKeepsCopies(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startNamespaceBed(t, 2)
	m1, m2 := bed.Members[0].Name, bed.Members[1].Name
	bed.hostNamespace(t, "shop")
	createObject(t, bed.host, federatedConfigMap(t, "shop", "web", placedOn(m1, m2)))
	uid1, uid2 := bed.configMapUID(t, m1, "shop", "web"), bed.configMapUID(t, m2, "shop", "web")

	bed.enable(t, "namespaces")
	kept := func(m string) string {
		return "kept " + m + ", which holds a copy, despite FederatedNamespace: namespace shop is not federated"
	}
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", "web", typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonCopiesKept, kept(m1), kept(m2))
	waitForEvent(t, bed.host, "shop", "web", typesv1beta1.ReasonCopiesKept+": ", kept(m1))
	bed.resyncAndWait(t, "shop", "web")
	bed.checkConfigMap(t, m1, "shop", "web", uid1)
	bed.checkConfigMap(t, m2, "shop", "web", uid2)
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", "web", typesv1beta1.FederatedPropagated, metav1.ConditionTrue, typesv1beta1.ReasonPropagated)

	// A new resource of the namespace goes nowhere: no copy is placed
	// where the namespace is not federated.
	createObject(t, bed.host, federatedConfigMap(t, "shop", "fresh", placedOn(m1, m2)))
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", "fresh", typesv1beta1.FederatedPropagated, metav1.ConditionFalse, typesv1beta1.ReasonNamespaceNotFederated,
		"namespace shop has no FederatedNamespace")
	for _, m := range []string{m1, m2} {
		if err := bed.members[m].Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: "fresh"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s has ConfigMap shop/fresh (%v), want none: its namespace is not federated", m, err)
		}
	}

	// The user federates the namespace to member-1 only: that is intent.
	createObject(t, bed.host, federatedNamespace(t, "shop", "shop", false, placedOn(m1)))
	bed.waitForNoConfigMap(t, m2, "shop", "web")
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", "web", typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonScheduled,
		"scheduled to "+m1, m2+": FederatedNamespace: namespace shop is not federated to it")
	bed.checkConfigMap(t, m1, "shop", "web", uid1)
	bed.configMapUID(t, m1, "shop", "fresh")
	if err := bed.members[m2].Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: "fresh"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s has ConfigMap shop/fresh (%v), want none: the namespace is federated to %s only", m2, err, m1)
	}

	// The same, written as every cluster but member-2: the FederatedNamespace's
	// excludeClusters keeps the namespace's resources out of member-2 too
	// (it was ignored, and a selector of all clusters let them in).
	fns := &unstructured.Unstructured{}
	fns.SetAPIVersion("types.kubefed.io/v1beta1")
	fns.SetKind("FederatedNamespace")
	fns.SetNamespace("shop")
	fns.SetName("shop")
	patch := fmt.Sprintf(`{"spec":{"placement":{"clusters":null,"clusterSelector":{},"excludeClusters":[{"name":%q}]}}}`, m2)
	if err := bed.host.Patch(t.Context(), fns, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatalf("patching FederatedNamespace shop: %v", err)
	}
	for _, name := range []string{"web", "fresh"} {
		// The namespace's change alone syncs what it holds again (the
		// controller's NamespaceChanged), before any resync.
		waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", name, typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonScheduled,
			"scheduled to "+m1, m2+": FederatedNamespace: namespace shop is not federated to it")
		bed.resyncAndWait(t, "shop", name)
		waitForConditionOf(t, bed.host, "FederatedConfigMap", "shop", name, typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonScheduled,
			"scheduled to "+m1, m2+": FederatedNamespace: namespace shop is not federated to it")
		if err := bed.members[m2].Get(t.Context(), types.NamespacedName{Namespace: "shop", Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s has ConfigMap shop/%s (%v), want none: the FederatedNamespace excludes it", m2, name, err)
		}
	}
	bed.checkConfigMap(t, m1, "shop", "web", uid1)
	checkPlanOfANamespaceWithItsResources(t, bed, m1, m2)
}

// With namespaces federated, a new controller-manager starts the type
// controllers in whatever order and writes nothing to a member: not the
// copy a namespace keeps from member-2 (written, then deleted, when the
// ConfigMaps' controller started before the namespaces'), not the copies
// kept in a namespace that has no FederatedNamespace.
func TestTypeControllerStartOrderNeverDeletesACopy(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	bed := startNamespaceBed(t, 2)
	m1, m2 := bed.Members[0].Name, bed.Members[1].Name
	// Copies made before namespaces were federated, in a namespace that
	// is not: kept.
	bed.hostNamespace(t, "legacy")
	createObject(t, bed.host, federatedConfigMap(t, "legacy", "web", placedOn(m1, m2)))
	bed.configMapUID(t, m1, "legacy", "web")
	bed.configMapUID(t, m2, "legacy", "web")
	bed.enable(t, "namespaces")
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "legacy", "web", typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonCopiesKept)

	// A namespace federated to member-1 only, whose ConfigMaps ask for
	// every cluster.
	bed.hostNamespace(t, "placed")
	createObject(t, bed.host, federatedNamespace(t, "placed", "placed", false, placedOn(m1)))
	names := []string{"a", "b", "c"}
	for _, name := range names {
		createObject(t, bed.host, federatedConfigMap(t, "placed", name, "  placement: {clusterSelector: {}}"))
	}
	for _, name := range names {
		bed.configMapUID(t, m1, "placed", name)
		waitForConditionOf(t, bed.host, "FederatedConfigMap", "placed", name, typesv1beta1.FederatedPropagated, metav1.ConditionTrue, typesv1beta1.ReasonPropagated, "1 of 1 clusters")
	}
	bed.cm.waitForIdle(t, 0, "configmaps", "namespaces")
	before := bed.memberState(t, "legacy", "placed")
	if _, ok := before[m2]["placed/a"]; ok {
		t.Fatalf("%s has placed/a before the restart: %v", m2, before[m2])
	}

	if err := bed.cm.stop(); err != nil {
		t.Fatal(err)
	}
	bed.startControllerManager(t)
	// Every resource is synced once at start: 4 ConfigMaps, 1 namespace.
	bed.cm.waitForIdle(t, float64(len(names)+1+1), "configmaps", "namespaces")
	if writes := bed.cm.memberWrites(t); writes != 0 {
		t.Errorf("the restarted controller-manager made %v writes to members, want none", writes)
	}
	after := bed.memberState(t, "legacy", "placed")
	for _, m := range []string{m1, m2} {
		for key, was := range before[m] {
			if after[m][key] != was {
				t.Errorf("%s %s: %s before the restart, %q after", m, key, was, after[m][key])
			}
		}
		for key := range after[m] {
			if _, ok := before[m][key]; !ok {
				t.Errorf("%s %s: new after the restart", m, key)
			}
		}
	}
	waitForConditionOf(t, bed.host, "FederatedConfigMap", "legacy", "web", typesv1beta1.FederatedScheduled, metav1.ConditionTrue, typesv1beta1.ReasonCopiesKept)
}
