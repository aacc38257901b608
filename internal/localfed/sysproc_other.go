//go:build !linux && !windows

package localfed

import "syscall"

// sysProcAttr puts a child in its own process group. Outside Linux there is no
// parent-death signal: Stop ends the children, but a parent that crashes or is
// killed with SIGKILL leaves them running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
