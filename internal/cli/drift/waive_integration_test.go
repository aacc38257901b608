package drift_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/fedwarden/fedwarden/internal/cli/drift"
	"github.com/fedwarden/fedwarden/internal/clitest"
)

// TestWaiveSaysWhenTheControllerHasNotTakenItUp waives on a real host
// where no controller-manager runs: the waiver is written, and the command,
// having waited --wait for the resource's status.observedGeneration, says
// that an edit may still be healed; with --wait 0 it says nothing of it.
func TestWaiveSaysWhenTheControllerHasNotTakenItUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed, host := startHost(ctx, t, "shop")
	createYAML(ctx, t, host, deploymentsTypeConfig)
	createYAML(ctx, t, host, strings.Replace(federatedDeployment, "NAME", "web", 1))
	waive := []string{"waive", "fdeploy/web", "-n", "shop", "--cluster", "cluster-a", "--path", replicasPath, "--for", "1h",
		"--reason", "load test", "--host-kubeconfig", fed.Host.Kubeconfig}

	stdout, stderr, code := clitest.Execute(drift.NewCommand, append(waive, "--wait", "1s")...)
	if code != 0 || !strings.HasPrefix(stdout, "Waived: the drift of /spec/replicas in cluster-a of FederatedDeployment shop/web") ||
		!strings.Contains(stderr, "has not taken the waiver up within 1s (its status.observedGeneration is 0, its generation 2): until it does, an edit of the waived paths may still be healed") {
		t.Errorf("drift waive --wait 1s with no controller: exit code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = clitest.Execute(drift.NewCommand, append(waive, "--wait", "0")...)
	if code != 0 || !strings.HasPrefix(stdout, "Waived: ") || stderr != "" {
		t.Errorf("drift waive --wait 0: exit code %d, stdout %q, stderr %q; want no note", code, stdout, stderr)
	}
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("types.kubefed.io/v1beta1")
	web.SetKind("FederatedDeployment")
	if err := host.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "web"}, web); err != nil {
		t.Fatal(err)
	}
	if waivers, _, _ := unstructured.NestedSlice(web.Object, "spec", "driftPolicy", "waivers"); len(waivers) != 2 {
		t.Errorf("the waivers written: %v; want both", waivers)
	}
}
