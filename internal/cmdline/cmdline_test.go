package cmdline

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedwarden/fedwarden/internal/streams"
)

func TestArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    cobra.PositionalArgs
		given   []string
		wantErr string // empty: accepted
	}{
		{name: "exactly one", args: ExactArgs(1, "the cluster name"), given: []string{"a"}},
		{name: "one, none given", args: ExactArgs(1, "the cluster name"), wantErr: "join takes one argument, the cluster name; got 0"},
		{name: "one, two given", args: ExactArgs(1, "the cluster name"), given: []string{"a", "b"}, wantErr: "join takes one argument, the cluster name; got 2"},
		{name: "exactly two", args: ExactArgs(2, "the kind and the object's name"), given: []string{"a", "b"}},
		{name: "two, one given", args: ExactArgs(2, "the kind and the object's name"), given: []string{"a"},
			wantErr: "join takes two arguments, the kind and the object's name; got 1"},
		{name: "three", args: ExactArgs(3, "a, b and c"), wantErr: "join takes 3 arguments, a, b and c; got 0"},
		{name: "at most one, none given", args: MaxArgs(1, "the resource")},
		{name: "at most one", args: MaxArgs(1, "the resource"), given: []string{"a"}},
		{name: "at most one, two given", args: MaxArgs(1, "the resource"), given: []string{"a", "b"}, wantErr: "join takes one argument, the resource; got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.args(&cobra.Command{Use: "join NAME"}, tt.given)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			if err == nil || err.Error() != tt.wantErr || streams.ExitCode(err) != streams.ExitUsage {
				t.Errorf("error %v (exit code %d), want %q (exit code %d)", err, streams.ExitCode(err), tt.wantErr, streams.ExitUsage)
			}
		})
	}
}

func TestSetup(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	cmd := Setup(&cobra.Command{Use: "join", RunE: func(*cobra.Command, []string) error { return nil }})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--frobnicate"})
	err := cmd.Execute()
	if streams.ExitCode(err) != streams.ExitUsage || !strings.Contains(err.Error(), "unknown flag: --frobnicate") {
		t.Errorf("error %v (exit code %d), want an unknown flag (exit code %d)", err, streams.ExitCode(err), streams.ExitUsage)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q: errors and usage are the root command's to print", out.String())
	}
}

func TestPositiveDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{time.Second: "", 0: "--timeout 0s must be positive", -time.Minute: "--timeout -1m0s must be positive"} {
		err := PositiveDuration("--timeout", d)
		if got := fmt.Sprint(err); (want == "" && err != nil) || (want != "" && got != want) {
			t.Errorf("PositiveDuration(%s) = %v, want %q", d, err, want)
		}
	}
}

// OneParsed parses the one argument into its destination before the
// command runs; an argument the parser refuses is a usage error (exit 2),
// and the command does not run.
func TestOneParsed(t *testing.T) {
	t.Parallel()
	parse := func(s string) (int, error) {
		if s == "bad" {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		return len(s), nil
	}
	var dst, ran int
	cmd := OneParsed(&cobra.Command{Use: "count WORD"}, "the word", parse, &dst, func(context.Context) error {
		ran++
		return nil
	})
	if err := cmd.Args(cmd, []string{"a", "b"}); err == nil || streams.ExitCode(err) != 2 {
		t.Errorf("two arguments: %v, want a usage error", err)
	}
	if err := cmd.RunE(cmd, []string{"four"}); err != nil || dst != 4 || ran != 1 {
		t.Errorf("a good argument: error %v, parsed %d, ran %d times; want 4 and once", err, dst, ran)
	}
	if err := cmd.RunE(cmd, []string{"bad"}); streams.ExitCode(err) != 2 || !strings.Contains(err.Error(), `"bad" is not a number`) || ran != 1 {
		t.Errorf("a bad argument: %v (ran %d times); want a usage error naming it, and no run", err, ran)
	}
}
