package enable

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	dir := t.TempDir()
	notDirective := writeFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	noName := writeFile(t, dir, "noname.yaml", "apiVersion: core.kubefed.io/v1beta1\nkind: EnableTypeDirective\n")
	typo := writeFile(t, dir, "typo.yaml", "apiVersion: core.kubefed.io/v1beta1\nkind: EnableTypeDirective\nmetadata:\n  name: secrets\nspec:\n  targetVerison: v1\n")
	emptyDir := t.TempDir()
	host := []string{"--host-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "nothing to enable", args: host, wantErr: "enable needs a resource"},
		{name: "two resources", args: append([]string{"a", "b"}, host...), wantErr: "one argument, the resource; got 2"},
		{name: "resource and -f", args: append([]string{"a", "-f", dir}, host...), wantErr: "not both"},
		{name: "-f and a version flag", args: append([]string{"-f", dir, "--target-version", "v1"}, host...), wantErr: "with -f, set spec.targetVersion"},
		{name: "bad output", args: append([]string{"a", "-o", "xml"}, host...), wantErr: `--output "xml" is not supported`},
		{name: "bad timeout", args: append([]string{"a", "--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "unknown flag", args: append([]string{"a", "--frobnicate"}, host...), wantErr: "unknown flag: --frobnicate"},
		{name: "missing file", args: append([]string{"-f", filepath.Join(dir, "none.yaml")}, host...), wantErr: "no such file"},
		{name: "empty directory", args: append([]string{"-f", emptyDir}, host...), wantErr: "holds no .yaml, .yml or .json file"},
		{name: "not a directive", args: append([]string{"-f", notDirective}, host...), wantErr: `kind "ConfigMap" is not EnableTypeDirective`},
		{name: "no name", args: append([]string{"-f", noName}, host...), wantErr: "has no metadata.name"},
		{name: "unknown field", args: append([]string{"-f", typo}, host...), wantErr: `unknown field "targetVerison"`},
		{name: "missing context", args: []string{"a", "--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestReadDirectives(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "b.yaml", "# comment\n---\napiVersion: core.kubefed.io/v1beta1\nkind: EnableTypeDirective\nmetadata:\n  name: secrets\n"+
		"---\napiVersion: core.kubefed.io/v1beta1\nkind: EnableTypeDirective\nmetadata:\n  name: deployments.apps\nspec:\n  targetVersion: v1\n  federatedGroup: fed.example.com\n  federatedVersion: v1alpha1\n")
	writeFile(t, dir, "a.json", `{"apiVersion": "core.kubefed.io/v1beta1", "kind": "EnableTypeDirective", "metadata": {"name": "configmaps"}}`)
	writeFile(t, dir, "README.md", "not read")
	tests := []struct {
		name  string
		paths []string
		want  []request
	}{
		{name: "KubeFed's directives", paths: []string{"../../../test/conformance/kubefed-v0.10.0/enabletypedirectives/jobs.batch.yaml"},
			want: []request{{resource: "jobs.batch", source: "../../../test/conformance/kubefed-v0.10.0/enabletypedirectives/jobs.batch.yaml"}}},
		{name: "a directory, in name order, with streams and spec", paths: []string{dir}, want: []request{
			{resource: "configmaps", source: filepath.Join(dir, "a.json")},
			{resource: "secrets", source: filepath.Join(dir, "b.yaml")},
			{resource: "deployments.apps", targetVersion: "v1", federatedGroup: "fed.example.com", federatedVersion: "v1alpha1", source: filepath.Join(dir, "b.yaml")},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := readDirectives(tt.paths)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("directive %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestKubeFedDirectives(t *testing.T) {
	t.Parallel()
	got, err := readDirectives([]string{"../../../test/conformance/kubefed-v0.10.0/enabletypedirectives"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.resource)
	}
	want := "clusterroles.rbac.authorization.k8s.io,configmaps,deployments.apps,ingresses.networking.k8s.io,jobs.batch,namespaces,replicasets.apps,secrets,serviceaccounts,services"
	if strings.Join(names, ",") != want {
		t.Errorf("directives %v, want %s", names, want)
	}
}
