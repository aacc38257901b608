package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
)

// TestDriftCodify: under Alert, `kubectl scale` of one member's copy is
// drift, and `fedwarden drift codify` makes it that cluster's override: the
// federated resource gains the override, the CPV entry becomes InSync, the
// member keeps its scale, and the other member is untouched. --dry-run
// writes nothing; a path that did not drift is refused.
func TestDriftCodify(t *testing.T) {
	skipInShortMode(t)
	t.Parallel()
	enableDeployments(t)
	host := hostClient(t)
	a := newScaleTarget(t, host, fed.Members[0].Name, fed.Members[0].Config)
	b := newScaleTarget(t, host, fed.Members[1].Name, fed.Members[1].Config)
	b.namespace = a.namespace
	const name = "codified"
	createObject(t, host, newFederatedDeployment(t, a.namespace, name, 5, placedOn(a.cluster, b.cluster)+"\n  driftPolicy: {remediation: Alert}"))
	waitForCPV(t, host, a.namespace, "deployment-"+name, "1", "1", a.cluster, b.cluster)
	a.waitForReplicas(t, name, 5)
	a.scale(t, name, 2)
	waitForEntry(t, host, a.namespace, "deployment-"+name, a.cluster, func(cv typesv1beta1.ClusterVersion) bool {
		return cv.State == typesv1beta1.ModifiedOutOfBand && slices.Equal(cv.ChangedPaths, []string{replicasPath})
	})
	codify := func(extra ...string) result {
		return runFedwarden(t, append([]string{"drift", "codify", "fdeploy/" + name, "-n", a.namespace, "--cluster", a.cluster,
			"--host-kubeconfig", fed.Host.Kubeconfig}, extra...)...)
	}

	if r := codify("--path", "/spec/paused"); r.code != 1 || !strings.Contains(r.stderr, "--path /spec/paused did not drift in cluster "+a.cluster) {
		t.Errorf("codify of a path that did not drift: want exit 1 and why\n%s", r)
	}
	if r := codify("--dry-run"); r.code != 0 || r.stdout != a.cluster+" /spec/replicas: 2, as in the member (the resource sets 5)\n" ||
		!strings.Contains(r.stderr, "nothing was written") {
		t.Errorf("codify --dry-run: want exit 0 and the override it would write\n%s", r)
	}
	if got := overridesOf(t, a.namespace, name); got != "" {
		t.Fatalf("codify --dry-run wrote spec.overrides %s", got)
	}

	if r := codify("--path", replicasPath, "-o", "yaml"); r.code != 0 || !strings.Contains(r.stdout, "path: /spec/replicas\n") {
		t.Fatalf("codify: want exit 0 and the cluster's overrides\n%s", r)
	}
	if got, want := overridesOf(t, a.namespace, name), `[{"clusterName":"`+a.cluster+`","clusterOverrides":[{"op":"replace","path":"/spec/replicas","value":2}]}]`; got != want {
		t.Errorf("spec.overrides after codify = %s, want %s", got, want)
	}
	waitForCPV(t, host, a.namespace, "deployment-"+name, "1", "2", a.cluster, b.cluster)
	if n, err := a.replicas(t.Context(), name); err != nil || n != 2 {
		t.Errorf("%s after codify: %d replicas (%v), want its scale to 2 kept", a.cluster, n, err)
	}
	if n, err := b.replicas(t.Context(), name); err != nil || n != 5 {
		t.Errorf("%s after codify: %d replicas (%v), want the template's 5", b.cluster, n, err)
	}
	if r := codify(); r.code != 1 || !strings.Contains(r.stderr, "is InSync, with no field changed out of band") {
		t.Errorf("codify once nothing drifts: want exit 1 and why\n%s", r)
	}
}

// overridesOf is the spec.overrides of a FederatedDeployment as JSON, ""
// when it has none.
func overridesOf(t *testing.T, namespace, name string) string {
	t.Helper()
	return nestedJSON(t, namespace, name, "spec", "overrides")
}

// nestedJSON is the field of a FederatedDeployment that fields name, as
// JSON; "" when it has none.
func nestedJSON(t *testing.T, namespace, name string, fields ...string) string {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("types.kubefed.io/v1beta1")
	obj.SetKind("FederatedDeployment")
	if err := hostClient(t).Get(context.Background(), types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	v, found, err := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	if err != nil || !found {
		return ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
