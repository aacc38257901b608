package controllermanager

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
		{name: "metrics certificate over plain HTTP", args: []string{"--metrics-cert-dir", t.TempDir()}, wantErr: "--metrics-cert-dir needs --metrics-secure"},
		{name: "metrics certificate missing", args: []string{"--metrics-secure", "--metrics-cert-dir", t.TempDir()}, wantErr: "tls.key"},
		{name: "bad webhook filter", args: []string{"--notify-webhook", "https://127.0.0.1:9/x kind=Deployment", "--notify-webhook", "https://u:s3cret@127.0.0.1:9/T0KEN colour=red"},
			wantErr: `--notify-webhook #2: webhook https://127.0.0.1:9: unknown filter "colour"`},
		{name: "webhook not http", args: []string{"--notify-webhook", "127.0.0.1/x"}, wantErr: "--notify-webhook #1: webhook URL must be absolute"},
		{name: "notify queue of 0", args: []string{"--notify-webhook", "https://127.0.0.1:9/x", "--notify-queue-size", "0"}, wantErr: "--notify-queue-size must be at least 1"},
		{name: "bad remediation", args: []string{"--default-remediation", "Heal"}, wantErr: `--default-remediation must be Enforce or Alert, not "Heal"`},
		{name: "memory limit ratio over 1", args: []string{"--auto-gomemlimit-ratio", "1.5"}, wantErr: "--auto-gomemlimit-ratio must be between 0 and 1, got 1.5"},
		{name: "host list timeout of 0", args: []string{"--host-list-timeout", "0s"}, wantErr: "--member-list-timeout and --host-list-timeout positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, append(tt.args, "--kubeconfig", kc)...)
		})
	}
}

// A webhook's credentials never show in the usage error about it.
func TestNotifyWebhookErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	_, stderr, _ := clitest.Execute(NewCommand, "--kubeconfig", kc, "--notify-webhook", "https://alice:s3cret@127.0.0.1:9/T0KEN?key=s3cret state=Nope")
	for _, secret := range []string{"alice", "s3cret", "T0KEN"} {
		if strings.Contains(stderr, secret) {
			t.Errorf("stderr %q shows %q", stderr, secret)
		}
	}
}
