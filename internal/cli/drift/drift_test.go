package drift

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/federatedtype"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an argument", args: append([]string{"web"}, host...), wantErr: `drift takes no arguments; got ["web"]`},
		{name: "-n and -A", args: append([]string{"-n", "shop", "-A"}, host...), wantErr: "give -n shop or -A, not both"},
		{name: "bad output", args: append([]string{"-o", "xml"}, host...), wantErr: `--output "xml" is not supported: use wide, json or yaml`},
		{name: "bad timeout", args: append([]string{"--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "unknown flag", args: append([]string{"--frobnicate"}, host...), wantErr: "unknown flag: --frobnicate"},
		{name: "missing context", args: []string{"--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestUnreachableHostIsAnError(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, code := clitest.Execute(NewCommand, "-A", "--host-kubeconfig", kc, "--timeout", "2s")
	if code != 1 || !strings.Contains(stderr, "listing ClusterPropagatedVersions") {
		t.Errorf("exit code %d, want 1; stderr %q", code, stderr)
	}
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *metav1.Time {
	t := metav1.NewTime(now.Add(-d))
	return &t
}

// testCPVs are the ClusterPropagatedVersions of a FederatedDeployment web
// in shop (one cluster in sync, two drifted), of a FederatedDeployment api
// in shop with entries in sync or unclassified, and of the cluster-scoped
// FederatedClusterRole reader.
func testCPVs() []typesv1beta1.ClusterPropagatedVersion {
	cpv := func(namespace, kind, name string, cvs ...typesv1beta1.ClusterVersion) typesv1beta1.ClusterPropagatedVersion {
		return typesv1beta1.ClusterPropagatedVersion{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: strings.ToLower(strings.TrimPrefix(kind, "Federated")) + "-" + name},
			Spec:       typesv1beta1.ClusterPropagatedVersionSpec{Template: name, TemplateKind: kind, TemplateAPIVersion: "types.kubefed.io/v1beta1"},
			Status:     typesv1beta1.ClusterPropagatedVersionStatus{ClusterVersions: cvs},
		}
	}
	return []typesv1beta1.ClusterPropagatedVersion{
		cpv("shop", "FederatedDeployment", "web",
			typesv1beta1.ClusterVersion{ClusterName: "cluster-c", State: typesv1beta1.InSync},
			typesv1beta1.ClusterVersion{
				ClusterName: "cluster-b", State: typesv1beta1.ModifiedOutOfBand, DriftedSince: ago(90 * time.Second),
				ChangedPaths: []string{"/spec/replicas", "/spec/template/spec/containers/0/image", "/metadata/labels/tier", "/spec/paused"},
				ChangedBy:    []string{"kubectl-edit", "hpa"}, Remediation: typesv1beta1.RemediationAlert,
				Message: "edited in the member:\n  replicas and image " + strings.Repeat("x", 100),
			},
			typesv1beta1.ClusterVersion{ClusterName: "cluster-a", State: typesv1beta1.Missing, DriftedSince: ago(3 * time.Hour), Remediation: typesv1beta1.RemediationEnforce},
		),
		cpv("shop", "FederatedDeployment", "api",
			typesv1beta1.ClusterVersion{ClusterName: "cluster-a", State: typesv1beta1.InSync},
			typesv1beta1.ClusterVersion{ClusterName: "cluster-b"},
		),
		cpv(corev1beta1.DefaultFederationNamespace, "FederatedClusterRole", "reader",
			typesv1beta1.ClusterVersion{ClusterName: "cluster-a", State: typesv1beta1.Unreachable, Message: "cluster cluster-a is not Ready"},
		),
		cpv("blog", "FederatedDeployment", "web",
			typesv1beta1.ClusterVersion{ClusterName: "cluster-a", State: typesv1beta1.OutdatedTemplate, DriftedSince: ago(2 * 24 * time.Hour), ChangedPaths: []string{"/spec/replicas"}},
		),
	}
}

func testScopes() federatedtype.Scopes {
	return federatedtype.ClusterScoped([]corev1beta1.FederatedTypeConfig{
		{Spec: corev1beta1.FederatedTypeConfigSpec{FederatedType: corev1beta1.APIResource{Group: "types.kubefed.io", Kind: "FederatedDeployment", Scope: corev1beta1.NamespaceScoped}}},
		{Spec: corev1beta1.FederatedTypeConfigSpec{FederatedType: corev1beta1.APIResource{Group: "types.kubefed.io", Kind: "FederatedClusterRole", Scope: corev1beta1.ClusterScoped}}},
	})
}

func TestEntries(t *testing.T) {
	t.Parallel()
	got := entries(testCPVs(), testScopes())
	var lines []string
	for _, e := range got {
		lines = append(lines, e.Namespace+" "+e.resource()+" "+e.Cluster+" "+string(e.State))
	}
	want := []string{
		" federatedclusterrole/reader cluster-a Unreachable",
		"blog federateddeployment/web cluster-a OutdatedTemplate",
		"shop federateddeployment/web cluster-a Missing",
		"shop federateddeployment/web cluster-b ModifiedOutOfBand",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	without := entries(testCPVs(), federatedtype.Scopes{})
	if i := slices.IndexFunc(without, func(e Entry) bool { return e.Name == "reader" }); without[i].Namespace != corev1beta1.DefaultFederationNamespace {
		t.Errorf("without type configs, the cluster-scoped resource is in namespace %q", without[i].Namespace)
	}
	if got := entries(nil, nil); got == nil || len(got) != 0 {
		t.Errorf("entries of nothing: %#v, want an empty list", got)
	}
}

func TestTable(t *testing.T) {
	t.Parallel()
	all := entries(testCPVs(), testScopes())
	shop := all[2:]
	tests := []struct {
		name          string
		entries       []Entry
		format        string
		allNamespaces bool
		want          string
	}{
		{name: "one namespace", entries: shop, want: `
RESOURCE                  CLUSTER     STATE               AGE   PATHS
federateddeployment/web   cluster-a   Missing             3h    <none>
federateddeployment/web   cluster-b   ModifiedOutOfBand   90s   /spec/replicas,/spec/template/spec/containers/0/image,+2
`},
		{name: "all namespaces", entries: all, allNamespaces: true, want: `
NAMESPACE   RESOURCE                      CLUSTER     STATE               AGE         PATHS
<none>      federatedclusterrole/reader   cluster-a   Unreachable         <unknown>   <none>
blog        federateddeployment/web       cluster-a   OutdatedTemplate    2d          /spec/replicas
shop        federateddeployment/web       cluster-a   Missing             3h          <none>
shop        federateddeployment/web       cluster-b   ModifiedOutOfBand   90s         /spec/replicas,/spec/template/spec/containers/0/image,+2
`},
		{name: "wide", entries: shop, format: "wide", want: `
RESOURCE                  CLUSTER     STATE               AGE   PATHS                                                      CHANGED BY         REMEDIATION   MESSAGE
federateddeployment/web   cluster-a   Missing             3h    <none>                                                     <none>             Enforce       <none>
federateddeployment/web   cluster-b   ModifiedOutOfBand   90s   /spec/replicas,/spec/template/spec/containers/0/image,+2   kubectl-edit,hpa   Alert         edited in the member: replicas and image xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := printEntries(&out, tt.format, tt.entries, tt.allNamespaces, now); err != nil {
				t.Fatal(err)
			}
			if got, want := out.String(), strings.TrimPrefix(tt.want, "\n"); got != want {
				t.Errorf("table:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestJSONAndYAML(t *testing.T) {
	t.Parallel()
	all := entries(testCPVs(), testScopes())
	wantKeys := []string{"changedBy", "changedPaths", "cluster", "driftedSince", "kind", "message", "name", "namespace", "remediation", "state"}
	for _, format := range []string{"json", "yaml"} {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			if err := printEntries(&out, format, all, true, now); err != nil {
				t.Fatal(err)
			}
			data := out.Bytes()
			if format == "yaml" {
				var err error
				if data, err = yaml.YAMLToJSON(data); err != nil {
					t.Fatal(err)
				}
			}
			var got []map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("%v:\n%s", err, out.String())
			}
			if len(got) != len(all) {
				t.Fatalf("%d items, want %d:\n%s", len(got), len(all), out.String())
			}
			for _, item := range got {
				if keys := slices.Sorted(maps.Keys(item)); !slices.Equal(keys, wantKeys) {
					t.Errorf("item keys %v, want %v", keys, wantKeys)
				}
			}
			last := got[3]
			if last["namespace"] != "shop" || last["kind"] != "FederatedDeployment" || last["name"] != "web" || last["cluster"] != "cluster-b" ||
				last["state"] != "ModifiedOutOfBand" || last["driftedSince"] != "2026-03-01T11:58:30Z" || last["remediation"] != "Alert" {
				t.Errorf("last item: %v", last)
			}
			if paths, _ := last["changedPaths"].([]any); len(paths) != 4 {
				t.Errorf("changedPaths %v", last["changedPaths"])
			}
			if first := got[0]; first["driftedSince"] != nil || first["namespace"] != "" {
				t.Errorf("first item: %v", first)
			}
		})
	}
	var out bytes.Buffer
	if err := printEntries(&out, "json", []Entry{}, false, now); err != nil || out.String() != "[]\n" {
		t.Errorf("nothing as json: %q, %v", out.String(), err)
	}
}

func TestNoDrift(t *testing.T) {
	t.Parallel()
	if got := noDrift(""); got != "No drift found." {
		t.Errorf("noDrift(all) = %q", got)
	}
	if got := noDrift("shop"); got != "No drift found in namespace shop." {
		t.Errorf("noDrift(shop) = %q", got)
	}
}
