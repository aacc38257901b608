package console_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/internal/streams"
)

// fed is the federation the integration tests share: a host and member-1;
// nil in -short mode.
var fed *localfed.Federation

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	streams.DiscardLibraryLogs()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var err error
	// Joining member-1 needs its ServiceAccount token controllers.
	fed, err = localfed.Start(ctx, localfed.WithMembers(1), localfed.WithControllers("serviceaccount-controller", "serviceaccount-token-controller"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local federation: %v\n", err)
		return 1
	}
	defer func() {
		if err := fed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local federation: %v\n", err)
		}
	}()
	return m.Run()
}

// needFederation skips a test in -short mode.
func needFederation(t *testing.T) {
	t.Helper()
	if fed == nil {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
}
