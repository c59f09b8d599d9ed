//go:build unix

package jars

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockDir takes the lock file at p (flock), waiting while another process
// holds it, and returns its release.
func lockDir(ctx context.Context, p string) (func(), error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the folder of the Apache Kafka jars: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", p, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another pipebench fetching into %s: %w", p, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}
