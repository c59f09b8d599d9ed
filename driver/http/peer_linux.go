//go:build linux

package httpdriver

import "syscall"

// peerClosed reports whether the peer closed the connection (or reset it):
// a peek that does not wait reads end of file or fails with anything but
// "would block". It reads nothing off the connection.
func peerClosed(raw syscall.RawConn) bool {
	closed := false
	err := raw.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
	})
	return err != nil || closed
}
