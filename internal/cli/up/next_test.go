package up

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedwarden/fedwarden/internal/localfed"
)

// fakeBinary writes an executable file at dir/rel and returns its path.
func fakeBinary(t *testing.T, dir, rel string) string {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTypedAs(t *testing.T) {
	checkout := t.TempDir()
	self := fakeBinary(t, checkout, filepath.Join("bin", "fedwarden"))
	other := fakeBinary(t, t.TempDir(), "fedwarden")
	spaced := fakeBinary(t, t.TempDir(), filepath.Join("my tools", "fedwarden"))
	cases := []struct {
		name, self, cwd, onPath, want string
	}{
		{"make up in the checkout", self, checkout, "", "bin/fedwarden"},
		{"another fedwarden on PATH", self, checkout, other, "bin/fedwarden"},
		{"this binary on PATH", self, checkout, self, "fedwarden"},
		{"run from bin/", self, filepath.Join(checkout, "bin"), "", "./fedwarden"},
		{"run from elsewhere", self, t.TempDir(), "", self},
		{"no working directory", self, "", "", self},
		{"a path to quote", spaced, t.TempDir(), "", "'" + spaced + "'"},
	}
	for _, c := range cases {
		if got := typedAs(c.self, c.cwd, c.onPath); got != c.want {
			t.Errorf("%s: typedAs(%q, %q, %q) = %q, want %q", c.name, c.self, c.cwd, c.onPath, got, c.want)
		}
	}
}

// What `make up` prints to type next names the binary that runs, by a
// path a shell in the same directory finds, not a bare "fedwarden" that
// is not on $PATH.
func TestPrintNextNamesTheRunningBinary(t *testing.T) {
	checkout := t.TempDir()
	self := fakeBinary(t, checkout, filepath.Join("bin", "fedwarden"))
	data := filepath.Join(checkout, ".fedwarden")
	b := &bringer{
		self:    self,
		typed:   typedAs(self, checkout, ""),
		dir:     data,
		opts:    &options{members: 2, withSamples: true},
		started: time.Now(),
		fed: &localfed.Federation{
			Host:    &localfed.Cluster{Name: "host", Kubeconfig: filepath.Join(data, "clusters", "host", "kubeconfig")},
			Members: []*localfed.Cluster{{Name: "member-1", Kubeconfig: "m1"}, {Name: "member-2", Kubeconfig: "m2"}},
			Dir:     filepath.Join(data, "clusters"),
		},
	}
	var out strings.Builder
	b.printNext(&out)
	printed := out.String()

	wantLines := []string{
		"  bin/fedwarden status",
		"  bin/fedwarden console    # the web console, on http://127.0.0.1:8800/",
		"  bin/fedwarden drift -A -o wide",
		"  bin/fedwarden diff fdeploy/web -n demo",
	}
	lines := strings.Split(printed, "\n")
	for _, want := range wantLines {
		if !slices.Contains(lines, want) {
			t.Errorf("printNext printed no line %q:\n%s", want, printed)
		}
	}
	for _, l := range lines {
		word := strings.Fields(l)
		if len(word) == 0 || !strings.HasSuffix(word[0], "fedwarden") {
			continue
		}
		// A shell runs a word with a slash relative to its directory, and
		// looks a bare word up on $PATH.
		if !strings.Contains(word[0], "/") {
			t.Errorf("printNext printed %q: a bare fedwarden, which is not on $PATH", l)
			continue
		}
		if !sameFile(filepath.Join(checkout, word[0]), self) {
			t.Errorf("printNext printed %q: from %s, %s is not the running binary %s", l, checkout, word[0], self)
		}
	}
	if !slices.Contains(lines, "  export KUBECONFIG="+b.fed.Host.Kubeconfig) {
		t.Errorf("printNext printed no export of the host kubeconfig:\n%s", printed)
	}
}

// With the running binary on $PATH as "fedwarden", the printed commands
// use the bare name.
func TestPrintNextUsesTheNameOnPath(t *testing.T) {
	dir := t.TempDir()
	self := fakeBinary(t, dir, "fedwarden")
	t.Setenv("PATH", dir)
	if got := typedName(self); got != "fedwarden" {
		t.Fatalf("typedName with %s on $PATH = %q, want fedwarden", dir, got)
	}
}
