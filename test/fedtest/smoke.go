package fedtest

import (
	"os"
	"testing"
)

// SmokeEnv, set to 1 in the environment, runs the benchmarks under bench/
// as a smoke test (make bench-smoke): each at a small size, checking counts
// (every object arrived, writes per copy) rather than measuring times, so
// that CI notices a benchmark that no longer works.
const SmokeEnv = "FEDWARDEN_BENCH_SMOKE"

// Smoke tells whether the benchmarks run as a smoke test (SmokeEnv is 1).
func Smoke() bool { return os.Getenv(SmokeEnv) == "1" }

// BenchN returns the size a benchmark runs at: smoke in a smoke test, full
// otherwise. In a smoke test it logs the size, so that the output says the
// figures are not measurements.
func BenchN(b testing.TB, full, smoke int) int {
	b.Helper()
	if !Smoke() {
		return full
	}
	b.Logf("%s=1: smoke size %d instead of %d; the figures are not measurements", SmokeEnv, smoke, full)
	return smoke
}
