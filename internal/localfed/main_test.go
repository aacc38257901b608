package localfed

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startFederation starts a federation stopped at the end of the test. It
// skips the test in -short mode: it needs the real binaries.
func startFederation(t testing.TB, opts ...Option) *Federation {
	t.Helper()
	skipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	fed, err := Start(ctx, opts...)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := fed.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return fed
}

// skipShort skips tests that need the real binaries in -short mode.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real etcd and kube-apiserver processes")
	}
}

// pids returns the process ids of every process of the federation now.
func (f *Federation) pids() []int {
	var pids []int
	if f.etcd != nil {
		pids = append(pids, f.etcd.proc.pid())
	}
	f.addMu.Lock()
	clusters := append(f.Clusters(), f.added...)
	f.addMu.Unlock()
	for _, c := range clusters {
		if p := c.proc.Load(); p != nil {
			pids = append(pids, p.pid())
		}
		if c.cm != nil {
			pids = append(pids, c.cm.pid())
		}
	}
	return pids
}

// processesMentioning returns the ids of the processes whose command line
// contains s, read from /proc.
func processesMentioning(t testing.TB, s string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil || len(dirs) == 0 {
		t.Skip("no /proc to look for processes")
	}
	var pids []int
	for _, path := range dirs {
		cmdline, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(cmdline), s) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}
