package agent

import (
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	base := []string{"--cluster-name", "edge", "--host-kubeconfig", kc, "--kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an argument", args: append([]string{"edge"}, base...), wantErr: `agent takes no arguments; got ["edge"]`},
		{name: "no host kubeconfig", args: []string{"--cluster-name", "edge"}, wantErr: "--host-kubeconfig is required"},
		{name: "no cluster name", args: []string{"--host-kubeconfig", kc}, wantErr: "--cluster-name"},
		{name: "bad cluster name", args: []string{"--cluster-name", "Edge_1", "--host-kubeconfig", kc}, wantErr: "--cluster-name"},
		{name: "lease too short", args: append([]string{"--lease-duration", "10s"}, base...), wantErr: "at least twice"},
		{name: "lease too long for the host", args: append([]string{"--lease-duration", "11m"}, base...), wantErr: "--lease-duration must be between 10s and 10m0s, got 11m0s"},
		{name: "bad remediation", args: append([]string{"--default-remediation", "Ignore"}, base...), wantErr: `--default-remediation must be Enforce or Alert, not "Ignore"`},
		{name: "bad qps", args: append([]string{"--host-api-qps", "0"}, base...), wantErr: "must be positive"},
		{name: "metrics certificate over plain HTTP", args: append([]string{"--metrics-cert-dir", t.TempDir()}, base...), wantErr: "--metrics-cert-dir needs --metrics-secure"},
		{name: "metrics certificate missing", args: append([]string{"--metrics-secure", "--metrics-cert-dir", t.TempDir()}, base...), wantErr: "tls.crt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}
