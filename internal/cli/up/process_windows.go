package up

import "syscall"

// sysProcAttr starts a child in a new process group, which Windows does not
// send Ctrl-C to, so that only up gets it and stops the children (down).
// Windows has no parent-death signal: if up is killed or crashes, the
// controller-manager and agents keep running until stopped by hand. It cannot
// send SIGTERM either, so down kills them at once.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}
