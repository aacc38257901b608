// Package memorylimit sets the Go runtime's soft memory limit (GOMEMLIMIT)
// to a share of the container's memory limit, as Prometheus does by
// default: as the heap nears the limit, the garbage collector works
// harder instead of the container being killed for its memory. The
// controller's memory grows with resources × clusters, and its peak is
// about twice its live heap between collections (docs/operations.md).
// The cgroup's limit is read with github.com/KimMachineGun/automemlimit.
package memorylimit

import (
	"fmt"
	"log/slog"
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
)

// DefaultRatio is the share of the container's memory limit the Go heap
// may use before collections get eager: the rest is for what Go does not
// count (the binary, thread stacks outside the heap, the page cache).
const DefaultRatio = 0.9

// Options configure the limit.
type Options struct {
	// Ratio of the container's memory limit; 0 leaves the runtime's limit
	// as it is.
	Ratio float64
}

// AddFlags adds --auto-gomemlimit-ratio.
func (o *Options) AddFlags(f *pflag.FlagSet) {
	f.Float64Var(&o.Ratio, "auto-gomemlimit-ratio", DefaultRatio, "set Go's soft memory limit (GOMEMLIMIT) to this share of the container's memory limit (cgroup), "+
		"so that the garbage collector works harder before the container is killed for its memory; 0 turns it off; a GOMEMLIMIT in the environment wins")
}

// Validate reports a ratio that cannot work.
func (o Options) Validate() error {
	if math.IsNaN(o.Ratio) || o.Ratio < 0 || o.Ratio > 1 {
		return fmt.Errorf("--auto-gomemlimit-ratio must be between 0 and 1, got %v", o.Ratio)
	}
	return nil
}

// Apply sets the limit from the container's, if it has one, and logs what
// it set. A container without a memory limit keeps the runtime's default.
func (o Options) Apply(log logr.Logger) {
	o.apply(log, memlimit.FromCgroup)
}

func (o Options) apply(log logr.Logger, provider memlimit.Provider) {
	if o.Ratio == 0 {
		return
	}
	limit, err := memlimit.Set(memlimit.WithRatio(o.Ratio), memlimit.WithProvider(provider),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(log.WithName("memorylimit")))))
	if err != nil {
		log.Info("Go's soft memory limit is left as it is: the container's memory limit cannot be read", "error", err.Error())
		return
	}
	if limit != math.MaxInt64 {
		log.Info("Go's soft memory limit follows the container's memory limit", "GOMEMLIMIT", limit, "ratio", o.Ratio)
	}
}
