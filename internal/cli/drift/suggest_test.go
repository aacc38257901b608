package drift

import (
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestSuggestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "two arguments", args: []string{"fdeploy/web", "fdeploy/api"}, wantErr: "suggest takes one argument, the federated resource, as KIND/NAME; got 2"},
		{name: "not KIND/NAME", args: []string{"web"}, wantErr: `"web" is not KIND/NAME`},
		{name: "-n and -A", args: []string{"-n", "shop", "-A"}, wantErr: "give -n shop or -A, not both"},
		{name: "a resource and -A", args: []string{"fdeploy/web", "-A"}, wantErr: "give fdeploy/web or -A, not both"},
		{name: "bad output", args: []string{"-o", "wide"}, wantErr: `--output "wide" is not supported: use text, yaml or json`},
		{name: "too few episodes", args: []string{"--min-episodes", "1"}, wantErr: "--min-episodes 1 must be at least 2"},
		{name: "episodes not a number", args: []string{"--min-episodes", "many"}, wantErr: `invalid argument "many" for "--min-episodes"`},
		{name: "bad timeout", args: []string{"--timeout", "0s"}, wantErr: "--timeout 0s must be positive"},
		{name: "unknown flag", args: []string{"--history"}, wantErr: "unknown flag: --history"},
		{name: "missing context", args: []string{"--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{"suggest"}, tt.args...), "--host-kubeconfig", kc)
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, args...)
		})
	}
}

func TestSuggestUnreachableHostIsAnError(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	for args, want := range map[string]string{"-A": "listing ClusterPropagatedVersions", "fdeploy/web": "listing FederatedTypeConfigs"} {
		_, stderr, code := clitest.Execute(NewCommand, "suggest", args, "--host-kubeconfig", kc, "--timeout", "2s")
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("suggest %s: exit code %d, want 1; stderr %q, want %q", args, code, stderr, want)
		}
	}
}
