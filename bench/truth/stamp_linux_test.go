//go:build linux

package truth_test

import (
	"encoding/binary"
	"net"
	"syscall"
	"time"
)

// stampedReader reads a TCP connection with the time the kernel received
// what each read returns (SO_TIMESTAMPNS), or the time of the read where
// the kernel does not say.
type stampedReader struct {
	raw syscall.RawConn
	buf []byte
	oob []byte
}

func newStampedReader(c *net.TCPConn) *stampedReader {
	raw, _ := c.SyscallConn()
	raw.Control(func(fd uintptr) {
		syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	})
	return &stampedReader{raw: raw, buf: make([]byte, 16<<10), oob: make([]byte, 128)}
}

// read returns what arrived (valid until the next read) and when.
func (r *stampedReader) read() ([]byte, time.Time, error) {
	var n, oobn int
	var rerr error
	err := r.raw.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), r.buf, r.oob, 0)
		return rerr != syscall.EAGAIN
	})
	now := time.Now()
	if err == nil {
		err = rerr
	}
	if err == nil && n == 0 {
		err = net.ErrClosed
	}
	if err != nil {
		return nil, now, err
	}
	at := now
	if msgs, perr := syscall.ParseSocketControlMessage(r.oob[:oobn]); perr == nil {
		for _, m := range msgs {
			if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
				sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
				nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
				if ago := now.UnixNano() - (sec*1e9 + nsec); ago >= 0 && ago < int64(10*time.Second) {
					at = now.Add(-time.Duration(ago))
				}
			}
		}
	}
	return r.buf[:n], at, nil
}
