//go:build !linux

package kyvernotest

import "syscall"

// sysProcAttr is nil outside Linux, which has no parent-death signal: the
// tests stop their children in their cleanups, but a test binary that crashes
// or times out leaves them running.
func sysProcAttr() *syscall.SysProcAttr {
	return nil
}
