package drift_test

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/drift"
	"github.com/fedwarden/fedwarden/internal/clitest"
)

const deploymentsTypeConfig = `
apiVersion: core.kubefed.io/v1beta1
kind: FederatedTypeConfig
metadata: {name: deployments.apps}
spec:
  federatedType: {group: types.kubefed.io, kind: FederatedDeployment, pluralName: federateddeployments, scope: Namespaced, version: v1beta1}
  propagation: Enabled
  targetType: {group: apps, kind: Deployment, pluralName: deployments, scope: Namespaced, version: v1}
`

// federatedDeployment is a FederatedDeployment of shop placed on cluster-a
// and cluster-b, under Alert, with an ignorePaths entry of its own.
const federatedDeployment = `
apiVersion: types.kubefed.io/v1beta1
kind: FederatedDeployment
metadata: {name: NAME, namespace: shop}
spec:
  placement: {clusters: [{name: cluster-a}, {name: cluster-b}]}
  driftPolicy:
    remediation: Alert
    ignorePaths: [/metadata/labels/tier]
  template:
    spec:
      selector: {matchLabels: {app: web}}
      template:
        metadata: {labels: {app: web}}
        spec: {containers: [{name: web, image: "nginx:1.25"}]}
`

const (
	replicasPath = "/spec/replicas"
	imagePath    = "/spec/template/spec/containers/0/image"
)

// TestSuggest reads the drift ledgers of ClusterPropagatedVersions of a real
// host: an autoscaler that keeps scaling web in both clusters is proposed
// for ignoreManagers, a person who keeps editing web's image in cluster-b
// for ignorePaths, and api, drifted twice, for nothing. Applying the merge
// patch printed leaves nothing to suggest.
func TestSuggest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed, host := startHost(ctx, t, "shop")
	flags := []string{"--host-kubeconfig", fed.Host.Kubeconfig}
	createYAML(ctx, t, host, deploymentsTypeConfig)
	for _, name := range []string{"web", "api"} {
		createYAML(ctx, t, host, strings.Replace(federatedDeployment, "NAME", name, 1))
	}
	t0 := time.Now().Add(-10 * time.Hour).UTC().Truncate(time.Second)
	at := func(h int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(h) * time.Hour)) }
	// episode is a drift of one hour from hour h, ended by Enforce, in which
	// manager changed path with an update.
	episode := func(h int, manager, path string) typesv1beta1.DriftEpisode {
		return typesv1beta1.DriftEpisode{Start: at(h), End: at(h + 1), State: typesv1beta1.ModifiedOutOfBand, ResolvedBy: typesv1beta1.ResolvedByEnforce,
			ChangedPaths: []string{path}, ChangedBy: []string{manager},
			ChangedByOperations: []typesv1beta1.ManagerOperation{{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Paths: []string{path}}}}
	}
	const hpa = "kube-controller-manager"
	createCPV(ctx, t, host, "shop", "web", typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "cluster-a", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{
			episode(0, hpa, replicasPath), episode(2, hpa, replicasPath), episode(4, hpa, replicasPath),
			episode(5, hpa, "/metadata/labels/tier"), // ignored already
		}},
		{ClusterName: "cluster-b", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{
			episode(1, hpa, replicasPath), episode(3, "kubectl-edit", imagePath), episode(5, "kubectl-edit", imagePath), episode(7, "kubectl-edit", imagePath),
		}},
	}})
	createCPV(ctx, t, host, "shop", "api", typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "cluster-a", State: typesv1beta1.InSync, DriftHistory: []typesv1beta1.DriftEpisode{episode(0, hpa, replicasPath), episode(2, hpa, replicasPath)}},
	}})

	stdout, stderr, code := clitest.Execute(drift.NewCommand, append([]string{"suggest", "-n", "shop"}, flags...)...)
	rfc := func(h int) string { return at(h).UTC().Format(time.RFC3339) }
	want := "federateddeployment.types.kubefed.io/web -n shop\n" +
		"  ignoreManagers: kube-controller-manager\n" +
		"    /spec/replicas by kube-controller-manager (Update): 4 episodes in 2 clusters (cluster-a, cluster-b), first seen " + rfc(0) + ", last seen " + rfc(5) + "\n" +
		"  ignorePaths: /spec/template/spec/containers/0/image\n" +
		"    /spec/template/spec/containers/0/image by kubectl-edit (Update), a person's tool: 3 episodes in 1 cluster (cluster-b), first seen " + rfc(3) + ", last seen " + rfc(8) + "\n" +
		`  kubectl patch federateddeployment.types.kubefed.io web -n shop --type merge -p '{"spec":{"driftPolicy":{"ignoreManagers":["kube-controller-manager"],"ignorePaths":["/metadata/labels/tier","/spec/template/spec/containers/0/image"]}}}'` + "\n"
	if code != 0 || stdout != want {
		t.Fatalf("suggest -n shop: exit code %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
	textPatch := stdout[strings.Index(stdout, "-p '")+4 : len(stdout)-2]

	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"suggest", "fdeploy/web", "-n", "shop", "-o", "yaml"}, flags...)...)
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(stdout), &doc); code != 0 || err != nil {
		t.Fatalf("suggest fdeploy/web -o yaml: exit code %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(textPatch), &fromText); err != nil || !reflect.DeepEqual(fromText["spec"], doc["spec"]) {
		t.Errorf("the yaml document's spec %v; want the patch of the text output, %s (%v)", doc["spec"], textPatch, err)
	}
	patch, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("types.kubefed.io/v1beta1")
	web.SetKind("FederatedDeployment")
	web.SetNamespace("shop")
	web.SetName("web")
	if err := host.Patch(ctx, web, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("applying the merge patch\n%s: %v", stdout, err)
	}
	policy, _, _ := unstructured.NestedMap(web.Object, "spec", "driftPolicy")
	if want := map[string]any{"remediation": "Alert", "ignorePaths": []any{"/metadata/labels/tier", imagePath}, "ignoreManagers": []any{hpa}}; !reflect.DeepEqual(policy, want) {
		t.Errorf("the driftPolicy patched: %v; want %v", policy, want)
	}

	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"suggest", "-n", "shop"}, flags...)...)
	if code != 0 || stdout != "" || !strings.HasPrefix(stderr, "No drift rule to suggest in namespace shop: ") {
		t.Errorf("suggest after the patch: exit code %d, stdout %q, stderr %q; want nothing to suggest", code, stdout, stderr)
	}
	_, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"suggest", "fdeploy/nope", "-n", "shop"}, flags...)...)
	if code != 1 || !strings.Contains(stderr, "FederatedDeployment shop/nope not found in the host") {
		t.Errorf("suggest of a missing resource: exit code %d, want 1; stderr %q", code, stderr)
	}
	_, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"suggest", "configmap/web", "-n", "shop"}, flags...)...)
	if code != 2 || !strings.Contains(stderr, `unknown federated kind "configmap"`) {
		t.Errorf("suggest of a kind that is not federated: exit code %d, want 2; stderr %q", code, stderr)
	}
	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"suggest", "-A", "-o", "json", "--min-episodes", "2"}, flags...)...)
	var proposals []drift.Proposal
	if err := json.Unmarshal([]byte(stdout), &proposals); code != 0 || err != nil || len(proposals) != 1 || proposals[0].Name != "api" ||
		proposals[0].Suggestions[0].Value != hpa || proposals[0].Suggestions[0].Evidence[0].Episodes != 2 {
		t.Errorf("suggest -A -o json --min-episodes 2: exit code %d, %v; want api's autoscaler alone; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
}

// createYAML creates the object manifest holds.
func createYAML(ctx context.Context, t *testing.T, c client.Client, manifest string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
}
