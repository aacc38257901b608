package shard_test

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

// host is the host cluster the integration tests share, without members
// or Fedwarden's CRDs: the replicas need only its Leases. Nil in -short
// mode.
var host *localfed.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	streams.DiscardLibraryLogs()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	fed, err := localfed.Start(ctx, localfed.WithControllers(), localfed.WithoutCRDs())
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the local host: %v\n", err)
		return 1
	}
	defer func() {
		if err := fed.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the local host: %v\n", err)
		}
	}()
	host = fed.Host
	return m.Run()
}

// needHost skips a test in -short mode.
func needHost(t *testing.T) {
	t.Helper()
	if host == nil {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
}
