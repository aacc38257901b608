//go:build unix

package localfed

import (
	"errors"
	"syscall"
	"testing"
)

// alive reports whether a process with this id exists.
func alive(t testing.TB, pid int) bool {
	t.Helper()
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("probing process %d: %v", pid, err)
	}
	return err == nil
}
