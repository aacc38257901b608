package resync

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/clitest"
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
		{name: "no argument", args: host, wantErr: "resync takes one argument, the federated resource, as KIND/NAME; got 0"},
		{name: "two arguments", args: append([]string{"fdeploy", "web"}, host...), wantErr: "got 2"},
		{name: "no name", args: append([]string{"fdeploy"}, host...), wantErr: `"fdeploy" is not KIND/NAME`},
		{name: "empty name", args: append([]string{"fdeploy/"}, host...), wantErr: `"fdeploy/" is not KIND/NAME`},
		{name: "empty kind", args: append([]string{"/web"}, host...), wantErr: `"/web" is not KIND/NAME`},
		{name: "too many slashes", args: append([]string{"fdeploy/web/x"}, host...), wantErr: "is not KIND/NAME"},
		{name: "bad timeout", args: append([]string{"fdeploy/web", "--timeout", "-1s"}, host...), wantErr: "--timeout -1s must be positive"},
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

func TestUnreachableHostIsAnError(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, code := clitest.Execute(NewCommand, "fdeploy/web", "--host-kubeconfig", kc, "--timeout", "2s")
	if code != 1 || !strings.Contains(stderr, "listing FederatedTypeConfigs") {
		t.Errorf("exit code %d, want 1; stderr %q", code, stderr)
	}
}

func TestAnnotationPatch(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 30, 0, 123456789, time.FixedZone("CET", 3600))
	raw, err := annotationPatch(now)
	if err != nil {
		t.Fatal(err)
	}
	var patch map[string]map[string]map[string]string
	if err := json.Unmarshal(raw, &patch); err != nil {
		t.Fatal(err)
	}
	if got, want := patch["metadata"]["annotations"]["kubefed.io/resync"], "2026-03-01T11:30:00.123456789Z"; got != want {
		t.Errorf("patch %s: resync %q, want %q", raw, got, want)
	}
}
