package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/localfed"
	"github.com/fedwarden/fedwarden/test/fedtest"
)

// defaultParallel is how many tests of this package run at once when go
// test is not given -parallel. go test's default is GOMAXPROCS, 2 on CI,
// but these tests spend most of their time waiting (for probes, resyncs,
// Lease expiries, or the minute a steady-state test watches), not
// computing: two at a time left the machine mostly idle and the package
// took most of `make test`. The CPU-hungry part, starting test beds, is
// bounded on its own (maxStarts).
const defaultParallel = 8

// parallelEnv, set to a positive number, replaces defaultParallel.
const parallelEnv = "FEDWARDEN_E2E_PARALLEL"

// setParallel makes go test run defaultParallel (or parallelEnv) tests of
// this package at once, unless -parallel was given, which wins, or the
// fedwarden binary is race-built (make test-race), whose processes use
// several times the CPU: there go test's default stays. Called in TestMain
// after flag.Parse, before m.Run reads the flag.
func setParallel() error {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if given || os.Getenv(fedtest.RaceEnv) == "1" {
		return nil
	}
	n := defaultParallel
	if v := os.Getenv(parallelEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			return fmt.Errorf("%s=%q: want a positive number of tests to run at once", parallelEnv, v)
		}
	}
	return flag.Set("test.parallel", strconv.Itoa(n))
}

// maxStarts is how many kube-apiserver starts (a test bed of a test's
// own, a member added to the shared bed, a cluster restarted, `fedwarden
// up`) run at once. Starting one is the most CPU-hungry thing these tests
// do; with many tests running at once (defaultParallel), unbounded starts
// on 2 busy cores could keep a kube-apiserver from becoming ready within
// localfed's start timeout. A cluster that is up runs beside any number of
// others.
const maxStarts = 2

// starts holds a token per start in progress.
var starts = make(chan struct{}, maxStarts)

// startSlot waits for a start to be allowed and returns the function that
// ends it; it returns an error if ctx ends first.
func startSlot(ctx context.Context) (done func(), err error) {
	select {
	case starts <- struct{}{}:
		return func() { <-starts }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a turn to start a kube-apiserver: %w", ctx.Err())
	}
}

// startLocalFed is localfed.Start for a test bed of the test's own, in
// turn with the other starts (maxStarts). It logs how long the bed took to
// start, and how long it waited for its turn.
func startLocalFed(t *testing.T, opts ...localfed.Option) (*localfed.Federation, error) {
	t.Helper()
	asked := time.Now()
	done, err := startSlot(t.Context())
	if err != nil {
		return nil, err
	}
	defer done()
	began := time.Now()
	f, err := localfed.Start(t.Context(), opts...)
	if err == nil {
		t.Logf("test bed started in %s, after waiting %s for a turn", time.Since(began).Round(time.Millisecond), began.Sub(asked).Round(time.Millisecond))
	}
	return f, err
}

// restartCluster is c.Restart in turn with the other starts (maxStarts).
func restartCluster(t *testing.T, c *localfed.Cluster) error {
	t.Helper()
	done, err := startSlot(t.Context())
	if err != nil {
		return err
	}
	defer done()
	return c.Restart(t.Context())
}
