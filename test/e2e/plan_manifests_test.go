package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

// plannedResource is what this test reads of a report of plan -o json.
type plannedResource struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Clusters []struct {
		Name   string `json:"name"`
		Action string `json:"action"`
		Reason string `json:"reason"`
	} `json:"clusters"`
}

// checkPlanOfANamespaceWithItsResources: with namespaces federated, plan
// -f of a directory holding a new FederatedNamespace and a
// FederatedConfigMap of that namespace plans the ConfigMap where the
// FederatedNamespace will take the namespace (member-1), not nowhere, as
// if the namespace were not federated; applying both, the controller does
// what plan said.
func checkPlanOfANamespaceWithItsResources(t *testing.T, bed *nsBed, m1, m2 string) {
	t.Helper()
	dir := t.TempDir()
	for file, obj := range map[string]any{
		"0-namespace.yaml": federatedNamespace(t, "cafe", "cafe", false, placedOn(m1)).Object,
		"1-menu.yaml":      federatedConfigMap(t, "cafe", "menu", placedOn(m1, m2)).Object,
	} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := runFedwarden(t, "plan", "-f", dir, "-o", "json", "--host-kubeconfig", bed.Host.Kubeconfig)
	var reports []plannedResource
	if err := json.Unmarshal([]byte(r.stdout), &reports); r.code != 1 || err != nil || len(reports) != 2 {
		t.Fatalf("plan -f DIR -o json: want exit code 1 and two reports (%v):\n%s", err, r)
	}
	want := map[string]string{m1: "Create", m2: "NotPlaced"}
	for i, kind := range []string{"FederatedNamespace", "FederatedConfigMap"} {
		got := reports[i]
		if got.Kind != kind {
			t.Errorf("report %d is of a %s, want %s, in the files' order", i, got.Kind, kind)
		}
		for _, c := range got.Clusters {
			if want[c.Name] != c.Action {
				t.Errorf("%s %s in %s: %s (%s), want %s", got.Kind, got.Name, c.Name, c.Action, c.Reason, want[c.Name])
			}
		}
	}
	text := runFedwarden(t, "plan", "-f", dir, "--host-kubeconfig", bed.Host.Kubeconfig)
	if text.code != 1 || !strings.Contains(text.stdout, "Plan for FederatedNamespace cafe/cafe") || !strings.Contains(text.stdout, "\n---\n") ||
		!strings.Contains(text.stdout, "Plan for FederatedConfigMap cafe/menu") {
		t.Errorf("plan -f DIR: want exit code 1 and both plans:\n%s", text)
	}

	bed.hostNamespace(t, "cafe")
	createObject(t, bed.host, federatedNamespace(t, "cafe", "cafe", false, placedOn(m1)))
	createObject(t, bed.host, federatedConfigMap(t, "cafe", "menu", placedOn(m1, m2)))
	bed.configMapUID(t, m1, "cafe", "menu")
	bed.resyncAndWait(t, "cafe", "menu")
	if err := bed.members[m2].Get(t.Context(), types.NamespacedName{Namespace: "cafe", Name: "menu"}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s has ConfigMap cafe/menu (%v); plan said the namespace keeps it out", m2, err)
	}
}
