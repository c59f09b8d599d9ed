//go:build linux

package rxstamp

import (
	"syscall"
	"unsafe"
)

// Enable asks the kernel to stamp what the socket receives with the time
// it arrived (SO_TIMESTAMPNS); it reports whether it will.
func Enable(raw syscall.RawConn) bool {
	ok := false
	raw.Control(func(fd uintptr) { ok = EnableFD(int(fd)) })
	return ok
}

// EnableFD is Enable on a descriptor.
func EnableFD(fd int) bool {
	return syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) == nil
}

// Recv is read(2) through recvmsg(2) on the non-blocking socket fd: the
// bytes, and when the kernel received the last of them (Unix nanoseconds,
// 0 when it did not say). It allocates nothing; EAGAIN comes back as the
// error.
func Recv(fd int, p []byte) (n int, rx int64, err error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	var oob [64]byte // room for one control message: a timespec
	iov := syscall.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := syscall.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), 0)
	if e != 0 {
		return 0, 0, e
	}
	return int(r), stampIn(oob[:msg.Controllen]), nil
}

// stampIn finds the SCM_TIMESTAMPNS message among the control messages in
// oob and returns its time in Unix nanoseconds, or 0.
func stampIn(oob []byte) int64 {
	const hdr = syscall.SizeofCmsghdr
	const align = int(unsafe.Sizeof(uintptr(0)))
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			return (*syscall.Timespec)(unsafe.Pointer(&oob[hdr])).Nano()
		}
		l = (l + align - 1) &^ (align - 1)
		if l >= len(oob) {
			return 0
		}
		oob = oob[l:]
	}
	return 0
}
