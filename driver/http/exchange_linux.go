//go:build linux

package httpdriver

import (
	"io"
	"net"
	"os"
	"syscall"
	"time"
	"unsafe"

	"github.com/pipebench/pipebench/internal/conn/conncount"
)

// recvOnce reads into p once, with recvStamped when stamped, again on
// EINTR; again is true when there was nothing to read yet (EAGAIN).
func recvOnce(fd int, p []byte, stamped bool) (n int, rx int64, again bool, err error) {
	for {
		var e error
		if stamped {
			n, rx, e = recvStamped(fd, p)
		} else {
			n, e = readFD(fd, p)
		}
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			return 0, 0, true, nil
		case e != nil:
			return 0, 0, false, os.NewSyscallError("read", e)
		}
		return n, rx, false, nil
	}
}

// stampReceived asks the kernel to stamp what the socket receives with the
// time it arrived (SO_TIMESTAMPNS), read back by recvStamped. It reports
// whether the socket does.
func stampReceived(raw syscall.RawConn) bool {
	ok := false
	raw.Control(func(fd uintptr) {
		ok = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) == nil
	})
	return ok
}

// readFD is read(2) on a non-blocking descriptor: a raw system call (it
// never blocks, so the runtime need not hand the processor on meanwhile).
func readFD(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// recvStamped is read(2) through recvmsg(2), returning with the bytes when
// the kernel received the last of them (Unix nanoseconds, 0 when it did not
// say). It allocates nothing. The descriptor is non-blocking: a raw system
// call, like readFD.
func recvStamped(fd int, p []byte) (n int, rx int64, err error) {
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
	for len(oob) >= hdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < hdr || l > len(oob) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&oob[hdr]))
			return ts.Nano()
		}
		l = (l + int(unsafe.Sizeof(uintptr(0))) - 1) &^ (int(unsafe.Sizeof(uintptr(0))) - 1)
		if l >= len(oob) {
			return 0
		}
		oob = oob[l:]
	}
	return 0
}

// arrived turns a kernel receive time (Unix nanoseconds) into a time on the
// process's monotonic clock: now less how long ago the kernel received it.
// It is zero when rx is 0 or not within the last 10 seconds (the wall clock
// was stepped meanwhile).
func arrived(rx int64, now time.Time) time.Time {
	if rx == 0 {
		return time.Time{}
	}
	ago := now.UnixNano() - rx
	if ago < 0 || ago > int64(10*time.Second) {
		return time.Time{}
	}
	return now.Add(-time.Duration(ago))
}

// stampedReader reads a plain TCP connection with recvStamped, keeping when
// the bytes of its latest read reached the machine. The pipelined client's
// reader reads through it: an answer complete after a read arrived at or
// before that read's stamp (the stamp is the last packet's), which is
// nearer the truth than when the reader got round to it.
type stampedReader struct {
	raw  syscall.RawConn
	p    []byte
	n    int
	rx   int64
	err  error
	step func(fd uintptr) bool // r.do, bound once
	last time.Time             // when the latest read's bytes arrived; zero if not stamped
}

// newStampedReader returns a stampedReader of netc, or nil when netc is not
// a plain TCP connection or its socket does not stamp what it receives.
func newStampedReader(netc net.Conn) *stampedReader {
	netc = conncount.Unwrap(netc) // a TLS connection stays one: not stamped
	raw := rawConn(netc)
	if _, ok := netc.(*net.TCPConn); !ok || raw == nil || !stampReceived(raw) {
		return nil
	}
	r := &stampedReader{raw: raw}
	r.step = r.do
	return r
}

func (r *stampedReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.rx, r.err = p, 0, 0, nil
	err := r.raw.Read(r.step)
	r.p = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, r.err
	case r.n == 0:
		return 0, io.EOF
	}
	r.last = arrived(r.rx, time.Now())
	return r.n, nil
}

func (r *stampedReader) do(fd uintptr) bool {
	m, rx, again, err := recvOnce(int(fd), r.p, true)
	if again {
		return false
	}
	r.n, r.rx, r.err = m, rx, err
	return true
}
