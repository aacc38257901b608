package diff

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	typesv1beta1 "github.com/fedwarden/fedwarden/api/types/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
	"github.com/fedwarden/fedwarden/internal/kindref"
	"github.com/fedwarden/fedwarden/internal/propagation"
	"github.com/fedwarden/fedwarden/internal/streams"
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
		{name: "no argument", args: host, wantErr: "diff takes one argument, the federated resource, as KIND/NAME; got 0"},
		{name: "not KIND/NAME", args: append([]string{"web"}, host...), wantErr: `"web" is not KIND/NAME`},
		{name: "bad cluster", args: append([]string{"fdeploy/web", "--cluster", "Cluster_A"}, host...), wantErr: `--cluster: "Cluster_A" is not a cluster name`},
		{name: "bad control-plane namespace", args: append([]string{"fdeploy/web", "--control-plane-namespace", "a/b"}, host...), wantErr: "--control-plane-namespace"},
		{name: "bad timeout", args: append([]string{"fdeploy/web", "--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "unknown flag", args: append([]string{"fdeploy/web", "--frobnicate"}, host...), wantErr: "unknown flag: --frobnicate"},
		{name: "missing context", args: []string{"fdeploy/web", "--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestUnreachableHostExitsWith2(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, code := clitest.Execute(NewCommand, "fdeploy/web", "-n", "shop", "--host-kubeconfig", kc, "--timeout", "2s")
	if code != 2 || !strings.Contains(stderr, "listing FederatedTypeConfigs") {
		t.Errorf("exit code %d, want 2; stderr %q", code, stderr)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{err: nil, want: 0},
		{err: errors.New("boom"), want: 2},
		{err: streams.UsageError(errors.New("bad")), want: 2},
		{err: &streams.ExitError{Code: exitDiffers, Err: errors.New("differs")}, want: 1},
	}
	for _, tt := range tests {
		if got := streams.ExitCode(exitCode(tt.err)); got != tt.want {
			t.Errorf("exitCode(%v): %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestPlacedClusters(t *testing.T) {
	t.Parallel()
	two := int32(2)
	r := &federated{
		kind: testKind(),
		fed:  object(t, "apiVersion: types.kubefed.io/v1beta1\nkind: FederatedDeployment\nmetadata: {name: web, namespace: shop}\n"),
		cpv: &typesv1beta1.ClusterPropagatedVersion{Spec: typesv1beta1.ClusterPropagatedVersionSpec{
			Clusters: []typesv1beta1.PlacedCluster{{Name: "cluster-a"}, {Name: "cluster-b", Replicas: &two}},
		}},
	}
	all, err := placedClusters(r, "")
	if err != nil || len(all) != 2 {
		t.Errorf("every cluster: %v, %v", all, err)
	}
	one, err := placedClusters(r, "cluster-b")
	if err != nil || len(one) != 1 || one[0].Name != "cluster-b" || *one[0].Replicas != 2 {
		t.Errorf("--cluster cluster-b: %v, %v", one, err)
	}
	_, err = placedClusters(r, "cluster-c")
	if streams.ExitCode(err) != 2 || err.Error() != "--cluster cluster-c: FederatedDeployment shop/web is not placed there; it is placed on cluster-a, cluster-b" {
		t.Errorf("--cluster cluster-c: %v", err)
	}
}

func TestAgentReport(t *testing.T) {
	cpv := &typesv1beta1.ClusterPropagatedVersion{Status: typesv1beta1.ClusterPropagatedVersionStatus{
		TemplateVersion: "2", OverrideVersion: "1",
		ClusterVersions: []typesv1beta1.ClusterVersion{
			{ClusterName: "edge", State: typesv1beta1.InSync, TemplateVersion: "2", OverrideVersion: "1"},
			{ClusterName: "late", State: typesv1beta1.InSync, TemplateVersion: "1", OverrideVersion: "1"},
			{ClusterName: "edited", State: typesv1beta1.ModifiedOutOfBand, TemplateVersion: "2", OverrideVersion: "1", ChangedPaths: []string{"/spec/replicas"}},
		},
	}}
	tests := []struct {
		cluster string
		want    string
		differs bool
	}{
		{"edge", "its agent reports InSync at template version 2, override version 1", false},
		{"late", "its agent reports InSync at template version 1, override version 1", true},
		{"edited", "ModifiedOutOfBand at template version 2, override version 1: changed /spec/replicas", true},
		{"silent", "its agent has not reported yet", true},
	}
	for _, tt := range tests {
		report, differs := agentReport(cpv, tt.cluster)
		if !strings.Contains(report, tt.want) || differs != tt.differs {
			t.Errorf("%s: got %q, %v; want %q, %v", tt.cluster, report, differs, tt.want, tt.differs)
		}
	}
}

func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := u.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	return u
}

// testKind is FederatedDeployment.
func testKind() kindref.Kind {
	return kindref.Kind{Type: propagation.Type{
		Name:                "deployments.apps",
		Federated:           schema.GroupVersionKind{Group: "types.kubefed.io", Version: "v1beta1", Kind: "FederatedDeployment"},
		Target:              schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"},
		TargetResource:      schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		TargetNamespaced:    true,
		FederatedNamespaced: true,
	}}
}
