//go:build !windows

package localfed

import "syscall"

// freezeSignal stops a process where it is, as a hung server: the kernel
// still accepts its connections, and nothing answers them.
var freezeSignal, thawSignal = syscall.SIGSTOP, syscall.SIGCONT

// canFreeze: the system can stop and continue a process.
const canFreeze = true
