package migrate

import (
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "output without dry run", args: []string{"-o", "yaml"}, wantErr: `--output "yaml" needs --dry-run`},
		{name: "bad output", args: []string{"--dry-run", "-o", "xml"}, wantErr: `--output "xml" is not supported`},
		{name: "state digest without rollback", args: []string{"--state-digest", "sha256:" + strings.Repeat("0", 64)}, wantErr: "--state-digest needs --rollback"},
		{name: "bad state digest", args: []string{"--rollback", "--state-digest", "0f1e"}, wantErr: `--state-digest "0f1e" is not a digest`},
		{name: "bad remediation", args: []string{"--default-remediation", "Heal"}, wantErr: `--default-remediation must be Enforce or Alert, not "Heal"`},
		{name: "bad stop timeout", args: []string{"--stop-timeout", "0s"}, wantErr: "--stop-timeout"},
		{name: "an argument", args: []string{"extra"}, wantErr: "extra"},
		{name: "rejoin and rollback", args: []string{"--rejoin", "--rollback"}, wantErr: "--rejoin and --rollback do not go together"},
		{name: "member kubeconfig without rejoin", args: []string{"--member-kubeconfig", kc}, wantErr: "--member-kubeconfig needs --rejoin"},
		{name: "resources without rejoin", args: []string{"--resources", "configmaps"}, wantErr: "--resources needs --rejoin"},
		{name: "bad resources", args: []string{"--rejoin", "--resources", "Config_Maps"}, wantErr: `resource "Config_Maps" is not valid`},
		{name: "propagate RBAC without rejoin", args: []string{"--propagate-rbac"}, wantErr: "--propagate-rbac needs --rejoin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, append([]string{"kubefed"}, append(tt.args, "--host-kubeconfig", kc)...)...)
		})
	}
}

func TestHelmValues(t *testing.T) {
	t.Parallel()
	args := []string{"--namespace=kube-federation-system", "--default-remediation=Alert", "--cluster-health-period=10s", "--propagation-workers=4"}
	got := helmValues(args)
	want := []string{"remediation.default=Alert", "controllerManager.clusterHealth.period=10s", "controllerManager.propagationWorkers=4"}
	if len(got) != len(want) {
		t.Fatalf("helmValues = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("helmValues[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
