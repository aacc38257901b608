package up

import "syscall"

// sysProcAttr puts a child in its own process group, so that Ctrl-C reaches
// only up, which stops the children in order (down), and has the kernel kill
// the child when the thread that started it dies: even when up is killed with
// SIGKILL or crashes, no controller-manager or agent is left behind. Go never
// ends the threads it starts processes from unless a goroutine locked to one
// exits, which up does not do.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
