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
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// copyIdentity is what tells a member copy that was left alone from one
// that was written, or deleted and created again.
type copyIdentity struct{ uid, resourceVersion string }

// copyIdentities reads the Deployment namespace/name in each member, by
// member name.
func copyIdentities(t *testing.T, members map[string]client.Client, namespace, name string) map[string]copyIdentity {
	t.Helper()
	out := map[string]copyIdentity{}
	for m, c := range members {
		d := &appsv1.Deployment{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
			t.Fatalf("reading Deployment %s/%s in %s: %v", namespace, name, m, err)
		}
		if d.DeletionTimestamp != nil {
			t.Fatalf("Deployment %s/%s in %s is being deleted", namespace, name, m)
		}
		out[m] = copyIdentity{uid: string(d.UID), resourceVersion: d.ResourceVersion}
	}
	return out
}

// checkCopiesUntouched fails the test when a member copy is not the one
// before: deleted, replaced (a new UID) or written (a new resourceVersion).
func checkCopiesUntouched(t *testing.T, members map[string]client.Client, namespace, name string, before map[string]copyIdentity) {
	t.Helper()
	if after := copyIdentities(t, members, namespace, name); !maps.Equal(before, after) {
		t.Errorf("member copies of %s/%s were touched: before %v, after %v", namespace, name, before, after)
	}
}

// waitForRebuiltCPV waits until the CPV namespace/name is whole and
// correct: not the one of UID replaced (when given), its spec placing the
// resource on clusters with no removal pending and a label per cluster,
// and an InSync entry per cluster at the CPV's own versions.
func waitForRebuiltCPV(t *testing.T, c client.Client, namespace, name string, replaced types.UID, clusters ...string) *typesv1beta1.ClusterPropagatedVersion {
	t.Helper()
	var cpv *typesv1beta1.ClusterPropagatedVersion
	poll.Eventually(t, 60*time.Second, fmt.Sprintf("CPV %s/%s rebuilt, in sync on %v", namespace, name, clusters), func(ctx context.Context) (bool, string) {
		var err error
		if cpv, err = cpvOf(ctx, c, namespace, name); err != nil {
			return false, err.Error()
		}
		return cpvCorrect(cpv, replaced, clusters)
	})
	return cpv
}

// cpvCorrect tells whether cpv is whole and in sync on clusters (sorted),
// and describes it.
func cpvCorrect(cpv *typesv1beta1.ClusterPropagatedVersion, replaced types.UID, clusters []string) (bool, string) {
	state := fmt.Sprintf("uid %s, labels %v, spec %+v, status %+v", cpv.UID, cpv.Labels, cpv.Spec, cpv.Status)
	var labelled []string
	for k := range cpv.Labels {
		if c, ok := strings.CutPrefix(k, typesv1beta1.LabelPlacedPrefix); ok {
			labelled = append(labelled, c)
		}
	}
	slices.Sort(labelled)
	st := cpv.Status
	if cpv.UID == replaced || !slices.Equal(cpvClusterNames(cpv), clusters) || len(cpv.Spec.Removals) > 0 || !slices.Equal(labelled, clusters) ||
		st.TemplateVersion == "" || st.OverrideVersion == "" || len(st.ClusterVersions) != len(clusters) {
		return false, state
	}
	for _, cv := range st.ClusterVersions {
		if !slices.Contains(clusters, string(cv.ClusterName)) || cv.State != typesv1beta1.InSync || cv.TemplateVersion != st.TemplateVersion || cv.OverrideVersion != st.OverrideVersion {
			return false, state
		}
	}
	return meta.IsStatusConditionTrue(st.Conditions, typesv1beta1.CPVPropagated) && !meta.IsStatusConditionTrue(st.Conditions, typesv1beta1.CPVDrifted), state
}

// Invariant 1 of the safety contract, for the CPV in push mode: a
// ClusterPropagatedVersion that is deleted (`kubectl delete cpv --all`) or
// edited by hand (its status entries, its spec) is rebuilt from the
// placement and the members, and no member copy is touched: no write, no
// deletion. The rebuilt CPV knows where the copies are: a placement drop
// afterwards still removes one.
func TestAMissingCPVIsRebuiltWithoutTouchingCopies(t *testing.T) {
	skipInShortMode(t)
	kubectlPath(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	ns := testNamespace(t, host)
	m1, m2 := fed.Members[0].Name, fed.Members[1].Name
	members := map[string]client.Client{m1: memberClient(t, 0), m2: memberClient(t, 1)}
	fd := newFederatedDeployment(t, ns, "web", 0, placedOn(m1, m2))
	// A resync asked for long ago: acted on once, it must not re-apply the
	// copies when the CPV that recorded it is gone.
	fd.SetAnnotations(map[string]string{typesv1beta1.AnnotationResync: "before-the-deletion"})
	createObject(t, host, fd)
	waitForCPV(t, host, ns, "deployment-web", "1", "1", m1, m2)
	// A second template version: the copies carry 2, which a CPV deleted
	// and rebuilt counts afresh.
	patchFederated(t, host, ns, "web", setImage(t, "nginx:1.28"))
	cpv := waitForCPV(t, host, ns, "deployment-web", "2", "1", m1, m2)
	for m, c := range members {
		waitForSettled(t, c, m, ns, "web")
	}
	before := copyIdentities(t, members, ns, "web")

	t.Run("kubectl delete cpv --all", func(t *testing.T) {
		out := kubectl(t, fed.Host.Kubeconfig, "delete", "cpv", "--all", "-n", ns)
		if !strings.Contains(out, "deployment-web") {
			t.Fatalf("kubectl delete cpv --all -n %s deleted nothing: %s", ns, out)
		}
		cpv = waitForRebuiltCPV(t, host, ns, "deployment-web", cpv.UID, m1, m2)
		// Two periodic resyncs of the rebuilt CPV write nothing either.
		time.Sleep(2 * resyncPeriod)
		checkCopiesUntouched(t, members, ns, "web", before)
	})

	t.Run("hand-edited status", func(t *testing.T) {
		// One entry removed, the other's versions and state changed.
		patch := fmt.Sprintf(`[{"op":"test","path":"/status/clusterVersions/0/clusterName","value":%q},`+
			`{"op":"remove","path":"/status/clusterVersions/0"},`+
			`{"op":"replace","path":"/status/clusterVersions/0/templateVersion","value":"9"},`+
			`{"op":"replace","path":"/status/clusterVersions/0/state","value":"Missing"}]`, cpv.Status.ClusterVersions[0].ClusterName)
		kubectl(t, fed.Host.Kubeconfig, "patch", "cpv", "deployment-web", "-n", ns, "--subresource=status", "--type=json", "-p", patch)
		cpv = waitForRebuiltCPV(t, host, ns, "deployment-web", "", m1, m2)
		checkCopiesUntouched(t, members, ns, "web", before)
	})

	t.Run("hand-edited spec", func(t *testing.T) {
		// m2 taken out of spec.clusters and its label, and told to remove
		// its copy: the host owns the spec, which follows the placement.
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}},"spec":{"clusters":[{"name":%q}],"removals":[{"name":%q}]}}`,
			typesv1beta1.LabelPlacedPrefix+m2, m1, m2)
		kubectl(t, fed.Host.Kubeconfig, "patch", "cpv", "deployment-web", "-n", ns, "--type=merge", "-p", patch)
		cpv = waitForRebuiltCPV(t, host, ns, "deployment-web", "", m1, m2)
		checkCopiesUntouched(t, members, ns, "web", before)
	})

	t.Run("a later placement drop still removes the copy", func(t *testing.T) {
		patchFederated(t, host, ns, "web", func(obj *unstructured.Unstructured) {
			setNested(t, obj.Object, []any{map[string]any{"name": m2}}, "spec", "placement", "clusters")
		})
		waitForAbsent(t, members[m1], &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}, m1, 60*time.Second)
		waitForRebuiltCPV(t, host, ns, "deployment-web", "", m2)
		checkCopiesUntouched(t, map[string]client.Client{m2: members[m2]}, ns, "web", map[string]copyIdentity{m2: before[m2]})
	})
}
