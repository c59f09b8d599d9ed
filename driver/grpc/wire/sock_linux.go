//go:build linux

package wire

import (
	"net"
	"syscall"
	"unsafe"

	"github.com/pipebench/pipebench/internal/conn/rxstamp"
)

// rawConn is nc's socket, read and written with system calls of the
// client's own (TCP and Unix sockets).
func rawConn(nc net.Conn) syscall.RawConn {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return raw
}

// writeRaw writes p to the non-blocking socket fd once: what it took, and
// no error when it took nothing for now (EAGAIN).
func writeRaw(fd uintptr, p []byte) (int, error) {
	for {
		r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		switch e {
		case 0:
			return int(r), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, e
	}
}

// recvStamped reads into p once from the non-blocking socket fd: with
// stamped, through recvmsg(2), also returning when the kernel received
// the last of the bytes (Unix nanoseconds; 0 when it did not say). It
// allocates nothing.
func recvStamped(fd int, p []byte, stamped bool) (n int, rx int64, err error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	if !stamped {
		r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
		if e != 0 {
			return 0, 0, e
		}
		return int(r), 0, nil
	}
	return rxstamp.Recv(fd, p)
}
