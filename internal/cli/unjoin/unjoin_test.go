package unjoin

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/fedwarden/fedwarden/internal/cli/streams"
)

func writeKubeconfig(t *testing.T) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["c"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "c"}
	kc.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	kc := writeKubeconfig(t)
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
			var out, errOut bytes.Buffer
			cmd := NewCommand(streams.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
			cmd.SetArgs(tt.args)
			cmd.SetOut(&out)
			cmd.SetErr(&errOut)
			err := cmd.Execute()
			var exit *streams.ExitError
			if !errors.As(err, &exit) || exit.Code != 2 {
				t.Fatalf("error %v, want exit code 2", err)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if out.Len()+errOut.Len() != 0 {
				t.Errorf("printed %q%q before failing", out.String(), errOut.String())
			}
		})
	}
}

// TestHostUnreachable checks that unjoin stops before the member when the
// host cannot be read: revoking the member's credentials while the
// FederatedCluster stays would leave a member that fails every probe.
func TestHostUnreachable(t *testing.T) {
	t.Parallel()
	kc := writeKubeconfig(t)
	var errOut bytes.Buffer
	cmd := NewCommand(streams.IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errOut})
	cmd.SetArgs([]string{"a", "--host-kubeconfig", kc, "--cluster-kubeconfig", kc, "--timeout", "5s"})
	err := cmd.Execute()
	var exit *streams.ExitError
	if err == nil || errors.As(err, &exit) {
		t.Fatalf("error %v, want a plain error (exit code 1)", err)
	}
	if !strings.Contains(err.Error(), "reading FederatedCluster a on the host") || strings.Contains(errOut.String(), "member") {
		t.Errorf("error %q, output %q", err, errOut.String())
	}
}
