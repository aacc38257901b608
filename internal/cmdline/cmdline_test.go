package cmdline

import (
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
