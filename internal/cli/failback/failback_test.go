package failback

import (
	"slices"
	"strings"
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no argument", args: host, wantErr: "failback takes one argument, the federated resource, as KIND/NAME; got 0"},
		{name: "no name", args: append([]string{"fdeploy"}, host...), wantErr: `"fdeploy" is not KIND/NAME`},
		{name: "bad cluster", args: append([]string{"fdeploy/web", "--cluster", "Not_A_Name"}, host...), wantErr: `--cluster "Not_A_Name" is not a cluster name`},
		{name: "bad control-plane namespace", args: append([]string{"fdeploy/web", "--control-plane-namespace", "x/y"}, host...), wantErr: `--control-plane-namespace "x/y" is not a namespace name`},
		{name: "bad timeout", args: append([]string{"fdeploy/web", "--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestChosen(t *testing.T) {
	t.Parallel()
	failed := map[string]string{"eu-2": "2026-12-07T12:00:00Z", "eu-3": "2026-12-07T12:01:00Z"}
	got, err := chosen(failed, nil)
	if err != nil || !slices.Equal(got, []string{"cluster eu-2 (failed over at 2026-12-07T12:00:00Z)", "cluster eu-3 (failed over at 2026-12-07T12:01:00Z)"}) {
		t.Errorf("all: %q, %v", got, err)
	}
	if got, err := chosen(failed, []string{"eu-3"}); err != nil || len(got) != 1 || !strings.HasPrefix(got[0], "cluster eu-3 ") {
		t.Errorf("eu-3: %q, %v", got, err)
	}
	if _, err := chosen(failed, []string{"eu-1", "eu-3"}); err == nil || err.Error() != "cluster eu-1 is not failed over (those failed over: eu-2, eu-3): nothing was written" {
		t.Errorf("eu-1: %v", err)
	}
	if _, err := chosen(nil, nil); err == nil || !strings.Contains(err.Error(), "no cluster of it is failed over") {
		t.Errorf("none failed over: %v", err)
	}
}
