//go:build !linux

package childproc

import "syscall"

// DieWithParent: only Linux kills a child when its parent dies; elsewhere
// Stop (and the run's teardown) is what ends it.
func DieWithParent() *syscall.SysProcAttr { return nil }
