package localfed

import "syscall"

// Windows cannot stop a process with a signal: Freeze fails there.
var freezeSignal, thawSignal syscall.Signal

const canFreeze = false
