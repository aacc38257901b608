package localfed

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestFailedStartStopsEverything starts a real etcd and a kube-apiserver
// that exits at once, and expects Start to report the apiserver's last words
// and to stop etcd.
func TestFailedStartStopsEverything(t *testing.T) {
	t.Parallel()
	skipShort(t)
	realBin, err := defaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(filepath.Join(realBin, "etcd"), filepath.Join(bin, "etcd")); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho starting\necho 'flag provided but not defined' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "kube-apiserver"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "fed")
	var logs lockedBuffer

	fed, err := Start(context.Background(), WithBinDir(bin), WithDataDir(dir), WithMembers(1), WithLogOutput(&logs), WithControllers())
	if err == nil {
		_ = fed.Stop()
		t.Fatal("Start succeeded with a broken kube-apiserver")
	}
	t.Logf("Start failed as expected: %v", err)
	// Both clusters' fake kube-apiservers fail; the first to fail is
	// reported, and stops the other.
	for _, want := range []string{"exit status 3", "flag provided but not defined"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !strings.Contains(err.Error(), "kube-apiserver member-1 exited") && !strings.Contains(err.Error(), "kube-apiserver host exited") {
		t.Errorf("error %q does not name the kube-apiserver that exited", err)
	}
	if left := processesMentioning(t, dir); len(left) > 0 {
		t.Errorf("processes %v still use %s", left, dir)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Errorf("a given data directory must be kept: %v", err)
	}
	// The other fake kube-apiserver may be stopped before it prints
	// anything: only the failing one's output, prefixed with its cluster,
	// is certain.
	if !strings.Contains(logs.String(), "[member-1] flag provided but not defined\n") && !strings.Contains(logs.String(), "[host] flag provided but not defined\n") {
		t.Errorf("log output does not show a cluster's kube-apiserver output:\n%s", logs.String())
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
