package controllermanager

import (
	"testing"

	"github.com/fedwarden/fedwarden/internal/cli/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "metrics certificate over plain HTTP", args: []string{"--metrics-cert-dir", t.TempDir()}, wantErr: "--metrics-cert-dir needs --metrics-secure"},
		{name: "metrics certificate missing", args: []string{"--metrics-secure", "--metrics-cert-dir", t.TempDir()}, wantErr: "tls.key"},
		{name: "bad remediation", args: []string{"--default-remediation", "Heal"}, wantErr: `--default-remediation must be Enforce or Alert, not "Heal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, append(tt.args, "--kubeconfig", kc)...)
		})
	}
}
