// Package cmdline sets up how fedwarden's commands treat their command
// line: the number of arguments they take, checks of flag values, and bad
// flags or arguments as usage errors (exit code 2, streams.UsageError).
package cmdline

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/streams"
)

// Setup sets cmd up as fedwarden's commands are: its errors are printed
// once, by the root command, its usage only on request, and a bad flag is
// a usage error. It returns cmd.
func Setup(cmd *cobra.Command) *cobra.Command {
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return streams.UsageError(err)
	})
	return cmd
}

// ExactArgs accepts exactly n arguments, which what names for the usage
// error: with ExactArgs(1, "the cluster name"), `join a b` fails with
// "join takes one argument, the cluster name; got 2".
func ExactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return argsError(cmd, n, what, len(args))
		}
		return nil
	}
}

// MaxArgs accepts at most n arguments, failing as ExactArgs does: for a
// command that can be told what to do some other way, such as a flag.
func MaxArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n {
			return argsError(cmd, n, what, len(args))
		}
		return nil
	}
}

// NoArgs accepts no argument; more are a usage error.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return streams.UsageError(fmt.Errorf("%s takes no arguments; got %q", cmd.Name(), args))
	}
	return nil
}

// OneParsed makes cmd take exactly one argument, what, which parse turns
// into *dst before run runs; an argument parse refuses is a usage error,
// as a missing or extra one is. It returns cmd.
func OneParsed[T any](cmd *cobra.Command, what string, parse func(string) (T, error), dst *T, run func(ctx context.Context) error) *cobra.Command {
	cmd.Args = ExactArgs(1, what)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := parse(args[0])
		if err != nil {
			return streams.UsageError(err)
		}
		*dst = v
		return run(cmd.Context())
	}
	return cmd
}

func argsError(cmd *cobra.Command, n int, what string, got int) error {
	return streams.UsageError(fmt.Errorf("%s takes %s, %s; got %d", cmd.Name(), arguments(n), what, got))
}

// arguments says "one argument", "two arguments"...
func arguments(n int) string {
	switch n {
	case 1:
		return "one argument"
	case 2:
		return "two arguments"
	default:
		return fmt.Sprintf("%d arguments", n)
	}
}

// PositiveDuration checks the value d of a duration flag, such as
// --timeout, that must be positive.
func PositiveDuration(flag string, d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%s %s must be positive", flag, d)
	}
	return nil
}
