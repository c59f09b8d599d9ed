//go:build linux

package wire

import (
	"net"
	"syscall"
	"unsafe"
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

// stampReceived asks the kernel to stamp what the socket receives with the
// time it arrived (SO_TIMESTAMPNS); it reports whether it will.
func stampReceived(raw syscall.RawConn) bool {
	ok := false
	raw.Control(func(fd uintptr) {
		ok = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) == nil
	})
	return ok
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
	var oob [64]byte
	iov := syscall.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := syscall.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	return int(r), timestampIn(oob[:msg.Controllen]), nil
}

// timestampIn returns the time of the SCM_TIMESTAMPNS control message in
// oob (Unix nanoseconds), or 0 when there is none.
func timestampIn(oob []byte) int64 {
	const hdr = syscall.SizeofCmsghdr
	const align = int(unsafe.Sizeof(uintptr(0)))
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		size := int(h.Len)
		if size < hdr || size > len(oob) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && size >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			return (*syscall.Timespec)(unsafe.Pointer(&oob[hdr])).Nano()
		}
		size = (size + align - 1) &^ (align - 1)
		if size >= len(oob) {
			return 0
		}
		oob = oob[size:]
	}
	return 0
}
