//go:build linux

package childproc

import "syscall"

// DieWithParent has the kernel kill the child with SIGKILL when pipebench
// dies first.
func DieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
