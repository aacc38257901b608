package drift_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/cli/drift"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/localfed"
)

// TestDrift lists the drift that ClusterPropagatedVersions of a real host
// record, as a table and as JSON, in one namespace and in all.
func TestDrift(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed, host := startHost(ctx, t, "shop", "blog", "quiet")
	flags := []string{"--host-kubeconfig", fed.Host.Kubeconfig}
	since := metav1.NewTime(time.Now().Add(-2 * time.Hour).Truncate(time.Second))
	createCPV(ctx, t, host, "shop", "web", typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "cluster-a", State: typesv1beta1.InSync},
		{ClusterName: "cluster-b", State: typesv1beta1.ModifiedOutOfBand, DriftedSince: &since, Remediation: typesv1beta1.RemediationAlert,
			ChangedPaths: []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/tier"}, ChangedBy: []string{"kubectl-edit"},
			Message: "edited in the member"},
	}})
	createCPV(ctx, t, host, "blog", "web", typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "cluster-a", State: typesv1beta1.Missing, DriftedSince: &since},
	}})
	createCPV(ctx, t, host, "quiet", "web", typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: []typesv1beta1.ClusterVersion{
		{ClusterName: "cluster-a", State: typesv1beta1.InSync},
	}})

	stdout, stderr, code := clitest.Execute(drift.NewCommand, append([]string{"-n", "shop"}, flags...)...)
	want := "RESOURCE                  CLUSTER     STATE               AGE   PATHS\n" +
		"federateddeployment/web   cluster-b   ModifiedOutOfBand   120m  /spec/replicas,/spec/template/spec/containers/0/image,+1\n"
	if code != 0 || normalize(stdout) != normalize(want) {
		t.Errorf("drift -n shop: exit code %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}

	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"-A", "-o", "wide"}, flags...)...)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "NAMESPACE   RESOURCE") || !strings.Contains(lines[0], "CHANGED BY") ||
		!strings.HasPrefix(lines[1], "blog ") || !strings.Contains(lines[1], "Missing") ||
		!strings.HasPrefix(lines[2], "shop ") || !strings.Contains(lines[2], "kubectl-edit") || !strings.Contains(lines[2], "edited in the member") {
		t.Errorf("drift -A -o wide: exit code %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"-A", "-o", "json"}, flags...)...)
	var list []drift.Entry
	if err := json.Unmarshal([]byte(stdout), &list); code != 0 || err != nil || len(list) != 2 {
		t.Fatalf("drift -A -o json: exit code %d, %v; stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if e := list[1]; e.Namespace != "shop" || e.Kind != "FederatedDeployment" || e.Name != "web" || e.Cluster != "cluster-b" ||
		e.State != typesv1beta1.ModifiedOutOfBand || e.DriftedSince == nil || !e.DriftedSince.Equal(&since) || len(e.ChangedPaths) != 3 {
		t.Errorf("drift -A -o json: second entry %+v", e)
	}

	stdout, stderr, code = clitest.Execute(drift.NewCommand, append([]string{"-n", "quiet"}, flags...)...)
	if code != 0 || stdout != "" || stderr != "No drift found in namespace quiet.\n" {
		t.Errorf("drift -n quiet: exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// startHost starts a host with no controller-manager and no member, with
// the namespaces given, and returns a client of it.
func startHost(ctx context.Context, t *testing.T, namespaces ...string) (*localfed.Federation, client.Client) {
	t.Helper()
	fed := clitest.StartFederation(ctx, t, localfed.WithMembers(0), localfed.WithControllers())
	host := clitest.Client(t, fed.Host.Kubeconfig)
	for _, ns := range namespaces {
		if err := host.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	return fed, host
}

// normalize makes ages that may have moved on while the test ran compare
// equal, and spaces before them.
func normalize(table string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(table, "121m", "120m")), " ")
}

func createCPV(ctx context.Context, t *testing.T, c client.Client, ns, name string, status typesv1beta1.ClusterPropagatedVersionStatus) {
	t.Helper()
	cpv := &typesv1beta1.ClusterPropagatedVersion{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deployment-" + name},
		Spec: typesv1beta1.ClusterPropagatedVersionSpec{
			Template: name, TemplateKind: "FederatedDeployment", TemplateAPIVersion: "types.kubefed.io/v1beta1",
			Clusters: []typesv1beta1.PlacedCluster{{Name: "cluster-a"}, {Name: "cluster-b"}},
		},
	}
	if err := c.Create(ctx, cpv); err != nil {
		t.Fatal(err)
	}
	cpv.Status = status
	if err := c.Status().Update(ctx, cpv); err != nil {
		t.Fatal(err)
	}
}
