package e2e

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// TestDriftSuggest: under Enforce, a controller in the member (field
// manager replica-tuner) scales a copy three times, and each time
// Fedwarden heals it; `fedwarden drift suggest` reads the three episodes
// from the ledger and proposes ignoreManagers for that manager, with its
// evidence and a patch, writing nothing.
func TestDriftSuggest(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	s := newScaleTarget(t, host, fed.Members[0].Name, fed.Members[0].Config)
	const name, tuner = "tuned", "replica-tuner"
	s.place(t, name, "")
	for i := 1; i <= 3; i++ {
		err := s.apps.Patch(types.MergePatchType).
			Namespace(s.namespace).Resource("deployments").Name(name).SubResource("scale").
			Param("fieldManager", tuner).
			Body([]byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, i))).
			Do(t.Context()).Error()
		if err != nil {
			t.Fatalf("scaling %s as %s: %v", name, tuner, err)
		}
		waitForEntry(t, host, s.namespace, "deployment-"+name, s.cluster, func(cv typesv1beta1.ClusterVersion) bool {
			return cv.State == typesv1beta1.InSync && len(cv.DriftHistory) == i
		})
	}
	r := runFedwarden(t, "drift", "suggest", "fdeploy/"+name, "-n", s.namespace, "--host-kubeconfig", fed.Host.Kubeconfig)
	want := fmt.Sprintf("  ignoreManagers: %s\n    %s by %s (Update): 3 episodes in 1 cluster (%s)", tuner, replicasPath, tuner, s.cluster)
	if r.code != 0 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, `"ignoreManagers":["`+tuner+`"]`) {
		t.Errorf("drift suggest: want exit 0 and ignoreManagers for %s with its evidence\n%s", tuner, r)
	}
	if got := nestedJSON(t, s.namespace, name, "spec", "driftPolicy"); got != "" {
		t.Errorf("drift suggest wrote the drift policy: %s", got)
	}
}
