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
	"github.com/pipebench/pipebench/internal/conn/rxstamp"
)

// recvOnce reads into p once, with rxstamp.Recv when stamped, again on
// EINTR; again is true when there was nothing to read yet (EAGAIN).
func recvOnce(fd int, p []byte, stamped bool) (n int, rx int64, again bool, err error) {
	for {
		var e error
		if stamped {
			n, rx, e = rxstamp.Recv(fd, p)
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
	if _, ok := netc.(*net.TCPConn); !ok || raw == nil || !rxstamp.Enable(raw) {
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
	r.last = rxstamp.Arrived(r.rx, time.Now())
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
