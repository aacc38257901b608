// Package clitest runs fedwarden's commands in tests, as the root command
// runs them, and writes the kubeconfigs and starts the local federations
// they are run against.
package clitest

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/fedwarden/fedwarden/internal/kubeconfig"
	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// Execute runs the command newCommand returns with args, and returns what
// it wrote to stdout and to stderr, where its error ends up as the root
// command prints it ("Error: ..."), and the exit code the root command
// would give.
func Execute(newCommand func(streams.IO) *cobra.Command, args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	cmd := newCommand(streams.IO{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString("Error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), streams.ExitCode(err)
}

// CheckUsageError runs the command as Execute does, and checks that it
// fails with a usage error (exit code 2) that holds want, having printed
// nothing before.
func CheckUsageError(t testing.TB, newCommand func(streams.IO) *cobra.Command, want string, args ...string) {
	t.Helper()
	stdout, stderr, code := Execute(newCommand, args...)
	if code != streams.ExitUsage {
		t.Errorf("exit code %d, want %d (stderr %q)", code, streams.ExitUsage, stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not contain %q", stderr, want)
	}
	if stdout != "" || !strings.HasPrefix(stderr, "Error: ") {
		t.Errorf("printed %q%q before failing", stdout, stderr)
	}
}

// UnreachableConfig returns a kubeconfig whose only context, host, is the
// current one and points to a server that is never contacted.
func UnreachableConfig() *clientcmdapi.Config {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["host"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	kc.AuthInfos["host"] = &clientcmdapi.AuthInfo{Token: "t"}
	kc.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "host"}
	kc.CurrentContext = "host"
	return kc
}

// WriteKubeconfig writes kc to a file in a temporary directory of t, and
// returns its path.
func WriteKubeconfig(t testing.TB, kc *clientcmdapi.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// Client returns a client of the current context of the kubeconfig at
// path, that knows the Kubernetes kinds and Fedwarden's.
func Client(t testing.TB, path string) client.Client {
	t.Helper()
	cluster, err := kubeconfig.Load(kubeconfig.Source{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Client(0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// StartFederation starts a local federation of real etcd and
// kube-apiserver processes, stopped when the test ends, or skips the test
// in -short mode.
func StartFederation(ctx context.Context, t *testing.T, opts ...localfed.Option) *localfed.Federation {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
	// The commands make clients long after the test binary started: without
	// a logger controller-runtime would complain.
	streams.DiscardLibraryLogs()
	fed, err := localfed.Start(ctx, opts...)
	if err != nil {
		t.Fatalf("starting the federation: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("stopping the federation: %v", err)
		}
	})
	return fed
}
