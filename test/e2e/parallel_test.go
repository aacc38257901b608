package e2e

import (
	"flag"
	"fmt"
	"os"
	"strconv"

	"github.com/fedwarden/fedwarden/test/fedtest"
)

// defaultParallel is how many tests of this package run at once when go
// test is not given -parallel. go test's default is GOMAXPROCS, 2 on CI,
// but these tests spend most of their time waiting (for probes, resyncs,
// Lease expiries, or the minute a steady-state test watches), not
// computing: two at a time left the machine mostly idle and the package
// took most of `make test`. The CPU-hungry part, starting test beds, is
// bounded on its own (fedtest.MaxStarts).
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
