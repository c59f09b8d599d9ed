//go:build linux

package fdlimit

import (
	"fmt"
	"sync"
	"syscall"
)

var mu sync.Mutex

func ensure(need uint64) error {
	mu.Lock()
	defer mu.Unlock()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the limit on open files: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return &Error{Need: need, Soft: lim.Cur, Hard: lim.Max}
	}
	raised := lim
	raised.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return fmt.Errorf("raise the limit on open files from %d to %d: %w", lim.Cur, lim.Max, err)
	}
	return nil
}

func current() (uint64, uint64) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, 0
	}
	return lim.Cur, lim.Max
}
