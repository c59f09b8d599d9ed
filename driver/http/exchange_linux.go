//go:build linux

package httpdriver

import (
	"io"
	"os"
	"syscall"
)

// canExchange: exchange is available here.
const canExchange = true

// exchange writes req and reads the first bytes of the answer into p within
// one wait on the poller: the read is armed before the request goes out, so
// the answer that comes back wakes the waiting goroutine directly, without
// the read that would otherwise find nothing yet ("would block") right after
// the write. It returns how much of req was written (all of it unless the
// socket's send buffer was full or the write failed), how many bytes were
// read, and the failure of the write or of the read. A timeout (the read
// deadline) or a closed connection before anything was written comes back as
// rerr with written 0.
func exchange(raw syscall.RawConn, req, p []byte) (written, n int, werr, rerr error) {
	wrote := false
	err := raw.Read(func(fd uintptr) bool {
		if !wrote {
			wrote = true
			for written < len(req) {
				m, e := syscall.Write(int(fd), req[written:])
				if e == syscall.EINTR {
					continue
				}
				if e != nil {
					if e != syscall.EAGAIN {
						werr = os.NewSyscallError("write", e)
					}
					return true // the caller writes the rest, or fails
				}
				written += m
			}
			return false // wait for the answer
		}
		for {
			m, e := syscall.Read(int(fd), p)
			switch {
			case e == syscall.EINTR:
				continue
			case e == syscall.EAGAIN:
				return false
			case e != nil:
				rerr = os.NewSyscallError("read", e)
			case m == 0:
				rerr = io.EOF
			}
			n = m
			return true
		}
	})
	if err != nil && werr == nil && rerr == nil {
		rerr = err
	}
	return written, n, werr, rerr
}
