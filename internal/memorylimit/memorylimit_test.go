package memorylimit

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
)

// The soft limit is the ratio of the container's limit; without a
// container limit, with the ratio 0, or with GOMEMLIMIT set, the runtime's
// limit stays as it was.
func TestApply(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	t.Setenv("AUTOMEMLIMIT", "") // restored after the test
	if err := os.Unsetenv("AUTOMEMLIMIT"); err != nil {
		t.Fatal(err)
	}
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })

	const container = 512 << 20
	for _, tt := range []struct {
		name     string
		ratio    float64
		provider memlimit.Provider
		want     int64
	}{
		{"the chart's 512Mi, 0.9 of it", 0.9, memlimit.Limit(container), container * 9 / 10},
		{"all of it", 1, memlimit.Limit(container), container},
		{"off", 0, memlimit.Limit(container), math.MaxInt64},
		{"no container limit", 0.9, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, math.MaxInt64},
		{"the cgroup cannot be read", 0.9, func() (uint64, error) { return 0, errors.New("no cgroup") }, math.MaxInt64},
	} {
		debug.SetMemoryLimit(math.MaxInt64)
		Options{Ratio: tt.ratio}.apply(logr.Discard(), tt.provider)
		if got := debug.SetMemoryLimit(-1); got != tt.want && (tt.want == math.MaxInt64 || math.Abs(float64(got-tt.want)) > 1) {
			t.Errorf("%s: GOMEMLIMIT %d, want %d", tt.name, got, tt.want)
		}
	}

	t.Setenv("GOMEMLIMIT", "100MiB")
	debug.SetMemoryLimit(100 << 20)
	Options{Ratio: 0.9}.apply(logr.Discard(), memlimit.Limit(container))
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Errorf("with GOMEMLIMIT in the environment: %d, want the environment's %d", got, 100<<20)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	for ratio, ok := range map[float64]bool{0: true, 0.5: true, 1: true, -0.1: false, 1.5: false, math.NaN(): false} {
		if err := (Options{Ratio: ratio}).Validate(); (err == nil) != ok {
			t.Errorf("ratio %v: %v", ratio, err)
		}
	}
}
