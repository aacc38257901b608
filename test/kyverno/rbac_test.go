package kyverno

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/fedwarden/fedwarden/test/kyverno/kyvernotest"
)

// TestKyvernoWritesOnlyTheFederatedKinds checks deploy/kyverno/rbac.yaml:
// Kyverno's controllers may write the federated kinds the Helm chart's
// rbac.federatedResources names, and nothing else of types.kubefed.io;
// never a ClusterPropagatedVersion, whose spec Pull agents obey; and no
// rule of theirs names every resource ("*").
func TestKyvernoWritesOnlyTheFederatedKinds(t *testing.T) {
	t.Parallel()
	deploy, err := kyvernotest.DeployDir()
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := kyvernotest.Read(filepath.Join(deploy, "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, obj := range manifests {
		var role rbacv1.ClusterRole
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(data, &role); err != nil {
			t.Fatalf("decoding %s: %v", obj.GetName(), err)
		}
		for _, r := range role.Rules {
			if slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
				t.Errorf("%s: rule %+v names every resource", role.Name, r)
			}
			if !slices.ContainsFunc(r.Verbs, isWrite) {
				continue
			}
			for _, res := range r.Resources {
				if strings.HasPrefix(res, "clusterpropagatedversions") {
					t.Errorf("%s may %v %s: only the controller-manager writes CPVs", role.Name, r.Verbs, res)
				}
				written = append(written, res+"."+strings.Join(r.APIGroups, ","))
			}
		}
	}
	want := chartFederatedResources(t, filepath.Join(deploy, "..", "helm", "fedwarden", "values.yaml"))
	slices.Sort(written)
	if !slices.Equal(written, want) {
		t.Errorf("Kyverno may write %v, want the chart's rbac.federatedResources %v", written, want)
	}
}

// isWrite tells whether verb changes an object.
func isWrite(verb string) bool {
	return !slices.Contains([]string{"get", "list", "watch"}, verb)
}

// chartFederatedResources returns the Helm chart's default
// rbac.federatedResources, sorted.
func chartFederatedResources(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var values struct {
		RBAC struct {
			FederatedResources []string `json:"federatedResources"`
		} `json:"rbac"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	if len(values.RBAC.FederatedResources) == 0 {
		t.Fatalf("%s has no rbac.federatedResources", path)
	}
	out := slices.Clone(values.RBAC.FederatedResources)
	slices.Sort(out)
	return out
}
