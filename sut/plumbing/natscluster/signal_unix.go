//go:build unix

package natscluster

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// lameDuckSignal puts a node into lame duck mode, as nats-server's own
// `--signal ldm` does.
var lameDuckSignal os.Signal = syscall.SIGUSR2

// signalPID sends sig to the process pid. A pid of 0 or less is refused:
// kill(2) would take it for this process's group (0), another group (less
// than -1) or every process it may signal (-1).
func signalPID(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("no process to signal (pid %d)", pid)
	}
	return syscall.Kill(pid, sig)
}

// The signals that freeze and thaw a process (a hung pod) and that ask a
// node for lame duck mode.
const (
	sigFreeze   = syscall.SIGSTOP
	sigThaw     = syscall.SIGCONT
	sigLameDuck = syscall.SIGUSR2
)

// freezePID stops the process pid (SIGSTOP) and returns once each of its
// threads is stopped (state T in /proc/PID/task/*/stat), or after 5 s:
// kill returns before the threads stop, and a request sent at once could
// still be answered by one that had not yet.
func freezePID(pid int) error {
	if err := signalPID(pid, sigFreeze); err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); !allStopped(pid) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// allStopped reports whether every thread of pid is stopped; true where
// /proc cannot say.
func allStopped(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return true
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + t.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// The state follows the command, which ends at the last ')'.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if st := b[i+2]; st != 'T' && st != 't' {
			return false
		}
	}
	return true
}
