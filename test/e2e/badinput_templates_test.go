package e2e

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// copyState is what a user compares to tell that a member copy was left
// alone: the same object (UID), spec (generation), content written by
// Fedwarden (its desired-hash annotation) and time of Fedwarden's last
// write. The resourceVersion is not in it: the member's own controllers
// write the Deployment's status.
type copyState struct{ uid, generation, hash, write string }

func copyStateOf(t *testing.T, c client.Client, where, namespace, name string) copyState {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		t.Fatalf("%s: reading Deployment %s/%s: %v", where, namespace, name, err)
	}
	if d.DeletionTimestamp != nil {
		t.Fatalf("%s: Deployment %s/%s is being deleted", where, namespace, name)
	}
	return copyState{uid: string(d.UID), generation: fmt.Sprint(d.Generation), hash: d.Annotations[typesv1beta1.AnnotationDesiredHash], write: fedwardenWrite(d)}
}

// copiesOf reads the Deployment namespace/name in each member, by member
// and name.
func copiesOf(t *testing.T, namespace string, names ...string) map[string]copyState {
	t.Helper()
	out := map[string]copyState{}
	for i, m := range fed.Members {
		c := memberClient(t, i)
		for _, n := range names {
			out[m.Name+"/"+n] = copyStateOf(t, c, m.Name, namespace, n)
		}
	}
	return out
}

// badOverride is one override, as the federated resource's spec holds it.
func badOverride(op, path string, value any, withValue bool) map[string]any {
	o := map[string]any{"path": path}
	if op != "" {
		o["op"] = op
	}
	if withValue {
		o["value"] = value
	}
	return o
}

// Bad input that only the runtime can see, in one cluster's part of a
// FederatedDeployment (its overrides): the cluster reports ApplyFailed with
// the cause in the resource's Propagated condition and a Warning Event, the
// copy already there stays as it is (not deleted, not written), and the
// other cluster's copy and another resource's copies are untouched. Fixing
// the input heals it.
func TestBadInputInTemplatesAndOverrides(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	tests := []struct {
		name      string
		overrides []any
		want      string // in the condition, the cluster's status and the Event
	}{
		{"override value of the wrong type", []any{badOverride("", "/spec/replicas", "three", true)}, "spec.replicas"},
		{"override value of the wrong type in a list", []any{badOverride("replace", "/spec/template/spec/containers", "nginx", true)}, "spec.template.spec.containers"},
		{"remove of a missing path", []any{badOverride("remove", "/spec/template/spec/nodeSelector", nil, false)}, "override 0 (remove /spec/template/spec/nodeSelector) does not apply to the template"},
		{"replace of a missing path", []any{badOverride("replace", "/spec/paused", true, true)}, "override 0 (replace /spec/paused) does not apply to the template"},
		{"add under a missing parent", []any{badOverride("add", "/spec/template/spec/nodeSelector/zone", "a", true)}, "override 0 (add /spec/template/spec/nodeSelector/zone) does not apply to the template"},
		{"add without a value", []any{badOverride("add", "/metadata/labels/tier", nil, false)}, "override 0 (add /metadata/labels/tier) has no value"},
		{"replace without a value", []any{badOverride("replace", "/spec/replicas", nil, false)}, "override 0 (replace /spec/replicas) has no value"},
		{"change of an immutable field (the selector)", []any{
			badOverride("", "/spec/selector/matchLabels/app", "other", true),
			badOverride("", "/spec/template/metadata/labels/app", "other", true),
		}, "field is immutable"},
		{"label value over 63 characters", []any{badOverride("add", "/metadata/labels/huge", strings.Repeat("x", 100), true)}, "must be no more than 63"},
		{"label value of invalid UTF-8", []any{badOverride("add", "/metadata/labels/bad", "caf\xff", true)}, "metadata.labels"},
		{"label key of invalid UTF-8", []any{badOverride("add", "/metadata/labels/caf\xff", "x", true)}, "metadata.labels"},
		{"annotations over 256 KiB", []any{badOverride("add", "/metadata/annotations", map[string]any{"huge": strings.Repeat("x", 300<<10)}, true)}, "metadata.annotations: Too long"},
		{"a container the member refuses (no image)", []any{badOverride("remove", "/spec/template/spec/containers/0/image", nil, false)}, "spec.template.spec.containers[0].image: Required value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ns := testNamespace(t, host)
			createObject(t, host, newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2)))
			createObject(t, host, newFederatedDeployment(t, ns, "other", 0, placedOn(m1, m2)))
			waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
			waitForCPV(t, host, ns, "deployment-other", "1", "1", m1, m2)
			before := copiesOf(t, ns, "web", "other")

			patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
				setNested(t, obj.Object, []any{map[string]any{"clusterName": m2, "clusterOverrides": tt.overrides}}, "spec", "overrides")
			})
			waitForFederatedStatus(t, host, ns, "web", metav1.ConditionFalse, typesv1beta1.ReasonPropagationFailed, map[string]clusterOutcome{
				m1: {reason: typesv1beta1.ClusterPropagated},
				m2: {reason: typesv1beta1.ClusterApplyFailed, message: tt.want},
			})
			_, st, err := federatedStatus(t.Context(), host, ns, "web")
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range st.Conditions {
				if c.Type == typesv1beta1.FederatedPropagated && !strings.Contains(c.Message, m2) {
					t.Errorf("Propagated condition %q does not name %s", c.Message, m2)
				}
			}
			waitForEvent(t, host, ns, "web", typesv1beta1.ClusterApplyFailed, "cluster "+m2, tt.want)
			// A few resyncs later, nothing was written or removed anywhere.
			waitForResyncs(t)
			if after := copiesOf(t, ns, "web", "other"); !maps.Equal(before, after) {
				t.Errorf("member copies were touched:\nbefore %v\nafter  %v", before, after)
			}
			checkNoEventStorm(t, host, ns, "web")

			// Fixed, it propagates again.
			patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
				setNested(t, obj.Object, []any{map[string]any{"clusterName": m2, "clusterOverrides": []any{
					badOverride("", "/spec/template/spec/containers/0/image", "nginx:1.28", true),
				}}}, "spec", "overrides")
			})
			waitForFederatedStatus(t, host, ns, "web", metav1.ConditionTrue, typesv1beta1.ReasonPropagated, map[string]clusterOutcome{
				m1: {reason: typesv1beta1.ClusterPropagated},
				m2: {reason: typesv1beta1.ClusterPropagated},
			})
		})
	}
}

// waitForResyncs waits for three periodic resyncs of the shared bed.
func waitForResyncs(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * resyncPeriod)
	poll.Eventually(t, 30*time.Second, "three resync periods", func(context.Context) (bool, string) {
		return time.Now().After(deadline), ""
	})
}

// checkNoEventStorm fails the test when the Events of name hold more
// than a handful of occurrences: a failure is reported when it is new,
// not at every resync. Scheduled Events are left out: they record each new
// placement decision, which this check is not about. (Another test's
// cluster joining or leaving the shared bed re-words the Scheduled
// condition, which lists the clusters ruled out, but records no Event, an
// Unschedulable one neither.)
func checkNoEventStorm(t *testing.T, c client.Client, namespace, name string) {
	t.Helper()
	var events []string
	for _, e := range eventsOf(t, c, namespace, name) {
		if !strings.HasPrefix(e, typesv1beta1.ReasonScheduled+": ") {
			events = append(events, e)
		}
	}
	if len(events) > 6 {
		t.Errorf("%d Events of %s/%s after a few resyncs, want a handful: %v", len(events), namespace, name, events)
	}
}

// A template whose metadata names another namespace is propagated to the
// resource's own namespace: the template's namespace is ignored (only its
// labels and annotations are kept), so nothing is written elsewhere. An
// object too large for the host's store is refused when it is created;
// one just under that size propagates.
func TestTemplateNamespaceAndSize(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name

	elsewhere := newFederatedDeployment(t, ns, "elsewhere", 0, placedOn(m1, m2))
	setNested(t, elsewhere.Object, "kube-system", "spec", "template", "metadata", "namespace")
	createObject(t, host, elsewhere)
	waitForCPV(t, host, ns, "deployment-elsewhere", "1", "1", m1, m2)
	for i := range fed.Members {
		copyStateOf(t, memberClient(t, i), fed.Members[i].Name, ns, "elsewhere")
		err := memberClient(t, i).Get(t.Context(), types.NamespacedName{Namespace: "kube-system", Name: "elsewhere"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s: reading kube-system/elsewhere gives %v, want NotFound", fed.Members[i].Name, err)
		}
	}

	// About 1.2 MiB of environment: under the 1.5 MiB a store takes.
	big := newFederatedDeployment(t, ns, "big", 0, placedOn(m1, m2))
	var env []any
	for i := range 12 {
		env = append(env, map[string]any{"name": fmt.Sprintf("BLOB_%d", i), "value": strings.Repeat("b", 100<<10)})
	}
	setEnv(t, big, env)
	createObject(t, host, big)
	waitForCPV(t, host, ns, "deployment-big", "1", "1", m1, m2)

	// About 2 MiB: the host refuses it, so no member sees it.
	huge := newFederatedDeployment(t, ns, "huge", 0, placedOn(m1, m2))
	env = nil
	for i := range 20 {
		env = append(env, map[string]any{"name": fmt.Sprintf("BLOB_%d", i), "value": strings.Repeat("h", 100<<10)})
	}
	setEnv(t, huge, env)
	err := host.Create(t.Context(), huge)
	if err == nil {
		t.Fatal("a 2 MiB FederatedDeployment was stored on the host")
	}
	t.Logf("the host refuses a 2 MiB FederatedDeployment: %.200s", err)
}

// setEnv sets the environment of the first container of a
// FederatedDeployment's template.
func setEnv(t *testing.T, obj *unstructured.Unstructured, env []any) {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "template", "spec", "containers")
	if err != nil || len(containers) == 0 {
		t.Fatalf("reading the containers: %v", err)
	}
	containers[0].(map[string]any)["env"] = env
	setNested(t, obj.Object, containers, "spec", "template", "spec", "template", "spec", "containers")
}
