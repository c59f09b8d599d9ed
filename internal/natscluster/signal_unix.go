//go:build unix

package natscluster

import (
	"os"
	"syscall"
)

// lameDuckSignal puts a node into lame duck mode, as nats-server's own
// `--signal ldm` does.
var lameDuckSignal os.Signal = syscall.SIGUSR2

// signalPID sends sig to the process pid.
func signalPID(pid int, sig syscall.Signal) error { return syscall.Kill(pid, sig) }

// The signals that freeze and thaw a process (a hung pod) and that ask a
// node for lame duck mode.
const (
	sigFreeze   = syscall.SIGSTOP
	sigThaw     = syscall.SIGCONT
	sigLameDuck = syscall.SIGUSR2
)
