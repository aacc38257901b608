//go:build !linux

package localfed

import "syscall"

// sysProcAttr puts a child in its own process group. Outside Linux there is no
// parent-death signal: a crashed parent leaves its children running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
