package localfed

import "syscall"

// sysProcAttr starts a child in a new process group, which Windows does not
// send Ctrl-C to, as Setpgid does elsewhere. Windows has no parent-death
// signal: Stop ends the children, but a parent that crashes or is killed
// leaves them running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
