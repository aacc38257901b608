package up

import (
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/manifest"
)

// TestSamplesDecode checks that the embedded samples are manifests that
// manifest.Decode takes: up finds out only once a federation is running.
func TestSamplesDecode(t *testing.T) {
	t.Parallel()
	objs, err := manifest.Decode("samples.yaml", samples)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.Obj.GetKind())
	}
	if got, want := strings.Join(kinds, ", "), "Namespace, FederatedNamespace, FederatedConfigMap, FederatedDeployment"; got != want {
		t.Errorf("samples: kinds %s, want %s", got, want)
	}
}
