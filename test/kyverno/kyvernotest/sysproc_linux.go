package kyvernotest

import "syscall"

// sysProcAttr has the kernel kill a child with SIGKILL when the thread that
// started it dies, so that a test binary that crashes or times out leaves no
// process behind. Go never ends the threads it starts processes from unless a
// goroutine locked to one exits.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
