package localfed

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestClusterNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []Option
		want    []string
		wantErr bool
	}{
		{name: "default", want: []string{"host"}},
		{name: "numbered members", opts: []Option{WithMembers(2)}, want: []string{"host", "member-1", "member-2"}},
		{name: "named members", opts: []Option{WithMemberNames("eu", "us")}, want: []string{"host", "eu", "us"}},
		{name: "count and names agree", opts: []Option{WithMembers(1), WithMemberNames("eu")}, want: []string{"host", "eu"}},
		{name: "count and names disagree", opts: []Option{WithMembers(2), WithMemberNames("eu")}, wantErr: true},
		{name: "negative count", opts: []Option{WithMembers(-1)}, wantErr: true},
		{name: "duplicate", opts: []Option{WithMemberNames("eu", "eu")}, wantErr: true},
		{name: "member called host", opts: []Option{WithMemberNames("host")}, wantErr: true},
		{name: "member called etcd", opts: []Option{WithMemberNames("etcd")}, wantErr: true},
		{name: "not a DNS label", opts: []Option{WithMemberNames("EU/1")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := newOptions(tt.opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if err == nil && !slices.Equal(append([]string{HostName}, o.memberNames...), tt.want) {
				t.Errorf("names %v, want %v", o.memberNames, tt.want)
			}
		})
	}
}

func TestModuleRoot(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	deep := filepath.Join(root, "a", "b")
	if err := os.MkdirAll(deep, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "go.mod"), "// Fedwarden\nmodule github.com/fedwarden/fedwarden\n\ngo 1.26\n")
	write(filepath.Join(root, "a", "go.mod"), "module example.com/other\n")
	got, err := moduleRoot(deep)
	if err != nil || got != root {
		t.Errorf("moduleRoot = %q, %v; want %q", got, err, root)
	}
}

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	tb := newTailBuffer()
	for _, s := range []string{"one\ntw", "o\nthree\n", "four\n"} {
		if _, err := tb.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	if got := tb.lastLines(2); got != "three\nfour" {
		t.Errorf("lastLines(2) = %q", got)
	}
	if got := tb.lastLines(10); got != "one\ntwo\nthree\nfour" {
		t.Errorf("lastLines(10) = %q", got)
	}
	big := make([]byte, 3*tailBytes)
	if _, err := tb.Write(append(big, "\nlast\n"...)); err != nil {
		t.Fatal(err)
	}
	if got := tb.lastLines(1); got != "last" || len(tb.buf) > 2*tailBytes {
		t.Errorf("after a big write: lastLines(1) = %q, %d bytes kept", got, len(tb.buf))
	}
}

func TestControllersMustShowReadiness(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    []Option
		wantErr bool
	}{
		{name: "default", opts: nil},
		{name: "none", opts: []Option{WithControllers()}},
		{name: "with the ServiceAccount controller", opts: []Option{WithControllers("serviceaccount-controller", "garbage-collector-controller")}},
		{name: "without it", opts: []Option{WithControllers("garbage-collector-controller")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newOptions(tt.opts)
			if (err != nil) != tt.wantErr {
				t.Errorf("newOptions: %v, want error %v", err, tt.wantErr)
			}
		})
	}
}
