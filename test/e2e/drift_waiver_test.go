package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/test/poll"
)

// TestDriftWaiver: under Enforce, a waiver of /spec/replicas in one cluster
// (`fedwarden drift waive`) keeps a hand scale there, Waived in the CPV
// with the waiver's expiry and reason; an edit of the image in the same
// copy is healed at once, and the write keeps the scale; once the waiver
// expires the scale is healed too, and the ledger's episode records the
// waiver. A waiver that selects the cluster by label (drift waive -l)
// keeps an edit too.
// Admission refuses a waiver without an expiry, with a malformed path, or
// with both or neither of clusters and clusterSelector.
func TestDriftWaiver(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	s := newScaleTarget(t, host, fed.Members[0].Name, fed.Members[0].Config)
	const name = "waived"
	s.place(t, name, "")

	r := runFedwarden(t, "drift", "waive", "fdeploy/"+name, "-n", s.namespace, "--cluster", s.cluster, "--path", replicasPath,
		"--for", "10m", "--reason", "valve maintenance", "--owner", "ops@example.com", "--host-kubeconfig", fed.Host.Kubeconfig, "--wait", settleWithin.String())
	// It returns once the controller has taken the waiver up: a scale
	// right after is kept, not healed.
	if r.code != 0 || !strings.Contains(r.stdout, "Waived: the drift of /spec/replicas in "+s.cluster) || strings.Contains(r.stderr, "has not taken the waiver up") {
		t.Fatalf("drift waive: want exit 0, taken up\n%s", r)
	}
	s.scale(t, name, 2)
	entry := waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.Waived
	})
	if entry.WaivedUntil == nil || time.Until(entry.WaivedUntil.Time) < 8*time.Minute || !strings.Contains(entry.Message, "valve maintenance, ops@example.com") ||
		entry.Remediation != typesv1beta1.RemediationEnforce {
		t.Errorf("the Waived entry: %+v; want its expiry about 10m ahead, the reason and owner, remediation Enforce", entry)
	}

	// Another path is healed at once, and the write keeps the scale.
	patchMember(t, s, name, `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:hotfix"}]}}}}`)
	poll.Eventually(t, settleWithin, "the image healed, the scale kept", func(ctx context.Context) (bool, string) {
		d, err := s.deployment(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		image := d.Spec.Template.Spec.Containers[0].Image
		return image == "nginx:1.27" && *d.Spec.Replicas == 2, fmt.Sprintf("%s, %d replicas", image, *d.Spec.Replicas)
	})
	waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.Waived
	})

	// The waiver ends: the policy applies again at once.
	patchFederated(t, host, s.namespace, name, func(obj *unstructured.Unstructured) {
		waivers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "driftPolicy", "waivers")
		waivers[0].(map[string]any)["expires"] = time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
		_ = unstructured.SetNestedSlice(obj.Object, waivers, "spec", "driftPolicy", "waivers")
	})
	s.waitForReplicas(t, name, 5)
	healed := waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.InSync && cv.WaivedUntil == nil
	})
	// The ledger has the episode, with the waiver that kept it and when.
	if n := len(healed.DriftHistory); n == 0 || healed.Waiver != nil {
		t.Errorf("the healed entry: %+v; want an episode in the ledger, and no waiver left on the entry", healed)
	} else if ep := healed.DriftHistory[n-1]; ep.Waiver == nil || ep.Waiver.Reason != "valve maintenance" || ep.Waiver.Owner != "ops@example.com" ||
		ep.Waiver.Since.Before(&ep.Start) || ep.ResolvedBy != typesv1beta1.ResolvedByEnforce {
		t.Errorf("the episode the waiver kept: %+v, waiver %+v; want the waiver from within the episode, healed by Enforce", ep, ep.Waiver)
	}

	// A waiver may select the clusters by their FederatedClusters' labels.
	r = runFedwarden(t, "drift", "waive", "fdeploy/"+name, "-n", s.namespace, "-l", corev1beta1.LabelCluster+"="+s.cluster, "--path", replicasPath,
		"--for", "10m", "--reason", "by label", "--host-kubeconfig", fed.Host.Kubeconfig, "--wait", settleWithin.String())
	if r.code != 0 || !strings.Contains(r.stdout, "in the clusters labelled "+corev1beta1.LabelCluster+"="+s.cluster) || strings.Contains(r.stderr, "has not taken the waiver up") {
		t.Fatalf("drift waive -l: want exit 0\n%s", r)
	}
	s.scale(t, name, 3)
	waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.Waived && strings.Contains(cv.Message, "by label")
	})

	for _, tt := range []struct{ waiver, field, why string }{
		{"{clusters: [a], paths: [/spec/replicas], reason: r}", "spec.driftPolicy.waivers[0].expires", "Required value"},
		{"{clusters: [a], paths: [spec/replicas], expires: '2030-01-01T00:00:00Z', reason: r}", "spec.driftPolicy.waivers[0].paths[0]", "should match"},
		{"{clusters: [a], paths: [/spec/replicas], expires: '2030-01-01T00:00:00Z'}", "spec.driftPolicy.waivers[0].reason", "Required value"},
		{"{clusters: [a], paths: [/spec/replicas, /metadata/resourceVersion], expires: '2030-01-01T00:00:00Z', reason: r}", "spec.driftPolicy.waivers[0].paths", "must not be the object's identity"},
		{"{paths: [/spec/replicas], expires: '2030-01-01T00:00:00Z', reason: r}", "spec.driftPolicy.waivers[0]", "exactly one of the two"},
		{"{clusters: [a], clusterSelector: {}, paths: [/spec/replicas], expires: '2030-01-01T00:00:00Z', reason: r}", "spec.driftPolicy.waivers[0]", "exactly one of the two"},
	} {
		obj := newFederatedDeployment(t, s.namespace, "refused", 1, "  driftPolicy: {waivers: ["+tt.waiver+"]}")
		rejected(t, host.Create(t.Context(), obj, client.DryRunAll), tt.field, tt.why)
	}
}

// patchMember applies a strategic merge patch to a member's Deployment, as
// a person with kubectl would.
func patchMember(t *testing.T, s scaleTarget, name, patch string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("apps/v1")
	obj.SetKind("Deployment")
	obj.SetNamespace(s.namespace)
	obj.SetName(name)
	if err := s.member.Patch(t.Context(), obj, client.RawPatch(types.StrategicMergePatchType, []byte(patch)), client.FieldOwner("kubectl-patch")); err != nil {
		t.Fatalf("patching Deployment %s/%s in %s: %v", s.namespace, name, s.cluster, err)
	}
}
