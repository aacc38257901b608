package unjoin

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	flags := []string{"--host-kubeconfig", kc, "--cluster-kubeconfig", kc}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no name", args: flags, wantErr: "one argument, the cluster name; got 0"},
		{name: "two names", args: append([]string{"a", "b"}, flags...), wantErr: "got 2"},
		{name: "unknown flag", args: append([]string{"a", "--wait"}, flags...), wantErr: "unknown flag: --wait"},
		{name: "bad name", args: append([]string{"A_1"}, flags...), wantErr: `cluster name "A_1" is not valid`},
		{name: "bad namespace", args: append([]string{"a", "--namespace", "Fed"}, flags...), wantErr: `namespace "Fed" is not valid`},
		{name: "zero timeout", args: append([]string{"a", "--timeout", "0s"}, flags...), wantErr: "--timeout 0s must be positive"},
		{name: "bad timeout", args: append([]string{"a", "--timeout", "later"}, flags...), wantErr: "later"},
		{name: "missing member context", args: []string{"a", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--cluster-context", "nope"},
			wantErr: `context "nope" (--cluster-context) is not in kubeconfig`},
		{name: "missing host kubeconfig", args: []string{"a", "--host-kubeconfig", filepath.Join(t.TempDir(), "none"), "--cluster-kubeconfig", kc},
			wantErr: "(--host-kubeconfig)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

// TestHostUnreachable checks that unjoin stops before the member when the
// host cannot be read: revoking the member's credentials while the
// FederatedCluster stays would leave a member that fails every probe.
func TestHostUnreachable(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, code := clitest.Execute(NewCommand, "a", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--timeout", "5s")
	if code != 1 {
		t.Fatalf("exit code %d, want 1 (stderr %q)", code, stderr)
	}
	progress, msg, _ := strings.Cut(stderr, "Error: ")
	if !strings.Contains(msg, "reading FederatedCluster a on the host") || strings.Contains(progress, "member") {
		t.Errorf("stderr %q", stderr)
	}
}
