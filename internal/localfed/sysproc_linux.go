package localfed

import "syscall"

// sysProcAttr puts a child in its own process group and has the kernel kill
// it when the thread that started it dies. Go never ends the threads it
// starts processes from unless a goroutine locked to one exits, which this
// package does not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
