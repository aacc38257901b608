package localfed

import (
	"os"
	"testing"
)

// alive reports whether a process with this id exists: on Windows, whether
// it can be opened.
func alive(t testing.TB, pid int) bool {
	t.Helper()
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
