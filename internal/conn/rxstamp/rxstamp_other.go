//go:build !linux

package rxstamp

import "syscall"

// Enable reports false: receive timestamps are read on Linux only.
func Enable(syscall.RawConn) bool { return false }

// EnableFD reports false: receive timestamps are read on Linux only.
func EnableFD(int) bool { return false }

// Recv is never called where Enable said no.
func Recv(int, []byte) (int, int64, error) { panic("rxstamp: Linux only") }
