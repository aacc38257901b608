package disable

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1beta1 "github.com/fedwarden/fedwarden/api/core/v1beta1"
	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	path := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no resource", args: []string{"--host-kubeconfig", path}, wantErr: "one argument, the resource; got 0"},
		{name: "two resources", args: []string{"a", "b", "--host-kubeconfig", path}, wantErr: "got 2"},
		{name: "force without delete-crd", args: []string{"a", "--force", "--delete", "--host-kubeconfig", path}, wantErr: "--force applies to --delete-crd only"},
		{name: "bad timeout", args: []string{"a", "--timeout", "-1s", "--host-kubeconfig", path}, wantErr: "must be positive"},
		{name: "unknown flag", args: []string{"a", "--purge", "--host-kubeconfig", path}, wantErr: "unknown flag: --purge"},
		{name: "missing context", args: []string{"a", "--host-kubeconfig", path, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestMatchTypeConfig(t *testing.T) {
	t.Parallel()
	ftc := func(name, group, kind, plural string) corev1beta1.FederatedTypeConfig {
		return corev1beta1.FederatedTypeConfig{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       corev1beta1.FederatedTypeConfigSpec{TargetType: corev1beta1.APIResource{Group: group, Version: "v1", Kind: kind, PluralName: plural}},
		}
	}
	ftcs := []corev1beta1.FederatedTypeConfig{
		ftc("configmaps", "", "ConfigMap", "configmaps"),
		ftc("deployments.apps", "apps", "Deployment", "deployments"),
	}
	tests := []struct{ arg, want string }{
		{"configmaps", "configmaps"},
		{"ConfigMap", "configmaps"},
		{"deployments.apps", "deployments.apps"},
		{"Deployments.Apps", "deployments.apps"},
		{"deployment.apps", "deployments.apps"},
		{"deployments", "deployments.apps"},
		{"deploy", ""}, // short names are left to discovery
		{"secrets", ""},
	}
	for _, tt := range tests {
		got := ""
		if m := matchTypeConfig(ftcs, tt.arg); m != nil {
			got = m.Name
		}
		if got != tt.want {
			t.Errorf("matchTypeConfig(%q) = %q, want %q", tt.arg, got, tt.want)
		}
	}
}
