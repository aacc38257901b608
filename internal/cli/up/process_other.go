//go:build !linux && !windows

package up

import "syscall"

// sysProcAttr puts a child in its own process group, so that Ctrl-C reaches
// only up, which stops the children in order (down). Outside Linux there is
// no parent-death signal: up stops its children when it exits on Ctrl-C or
// SIGTERM, but if it is killed with SIGKILL or crashes, the controller-manager
// and agents keep running until stopped by hand.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
