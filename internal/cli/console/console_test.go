package console

import (
	"testing"

	"github.com/fedwarden/fedwarden/internal/clitest"
)

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := clitest.WriteKubeconfig(t, clitest.UnreachableConfig())
	host := []string{"--host-kubeconfig", kc}
	plain := clitest.UnreachableConfig()
	plain.Clusters["host"].Server = "http://127.0.0.1:1"
	plainKC := clitest.WriteKubeconfig(t, plain)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "an argument", args: append([]string{"web"}, host...), wantErr: "console takes no arguments"},
		{name: "bad auth", args: append([]string{"--auth", "basic"}, host...), wantErr: `--auth "basic": local or token`},
		{name: "memory limit ratio below 0", args: append([]string{"--auto-gomemlimit-ratio", "-1"}, host...), wantErr: "--auto-gomemlimit-ratio must be between 0 and 1, got -1"},
		{name: "non-loopback address", args: append([]string{"--address", "0.0.0.0:8800"}, host...), // loopback-check: not dialed
			wantErr: "--address 0.0.0.0:8800 is not a loopback address"}, // loopback-check: not dialed
		{name: "address without port", args: append([]string{"--address", "127.0.0.1"}, host...), wantErr: `--address "127.0.0.1"`},
		{name: "host server in local mode", args: append([]string{"--host-server", "https://127.0.0.1:6443"}, host...), wantErr: "--host-server and --host-ca-file are for --auth=token"},
		{name: "bad timeout", args: append([]string{"--timeout", "0s"}, host...), wantErr: "--timeout 0s must be positive"},
		{name: "bad control-plane namespace", args: append([]string{"--control-plane-namespace", "a/b"}, host...), wantErr: "--control-plane-namespace"},
		{name: "missing CA file", args: []string{"--auth", "token", "--host-server", "https://127.0.0.1:6443", "--host-ca-file", "/nonexistent/ca.crt"}, wantErr: "--host-ca-file"},
		{name: "bad token recheck", args: append([]string{"--token-recheck", "0s"}, host...), wantErr: "--token-recheck 0s must be positive"},
		{name: "token recheck over a minute", args: append([]string{"--token-recheck", "5m"}, host...), wantErr: "--token-recheck 5m0s is longer than 1m0s"},
		{name: "bad object limit", args: append([]string{"--max-objects-per-identity", "0"}, host...), wantErr: "--max-objects-per-identity 0 must be positive"},
		{name: "token mode, http host server", args: []string{"--auth", "token", "--host-server", "http://127.0.0.1:6443"},
			wantErr: "the host's address is http://: the tokens would cross the network in clear; give the host's https:// address and the CA that verifies it (http://127.0.0.1:6443); that address comes from --host-server"},
		{name: "token mode, http kubeconfig server", args: []string{"--auth", "token", "--host-kubeconfig", plainKC},
			wantErr: `that address comes from the context "host" of ` + plainKC + ` (--host-kubeconfig, --host-context): pass --host-server https://HOST:PORT`},
		{name: "missing context", args: []string{"--host-kubeconfig", kc, "--host-context", "nope"}, wantErr: `context "nope" (--host-context)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clitest.CheckUsageError(t, NewCommand, tt.wantErr, tt.args...)
		})
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:8800": "http://127.0.0.1:8800/", "0.0.0.0:8800": "http://127.0.0.1:8800/", "[::1]:9000": "http://[::1]:9000/", "localhost:1": "http://localhost:1/", // loopback-check: not dialed
	} {
		if got := URL(addr); got != want {
			t.Errorf("URL(%q) = %q, want %q", addr, got, want)
		}
	}
}
