//go:build !linux

package truth_test

import (
	"net"
	"time"
)

// stampedReader reads a TCP connection with the time of each read (the
// kernel's receive timestamps are read on Linux only).
type stampedReader struct {
	c   *net.TCPConn
	buf []byte
}

func newStampedReader(c *net.TCPConn) *stampedReader {
	return &stampedReader{c: c, buf: make([]byte, 16<<10)}
}

func (r *stampedReader) read() ([]byte, time.Time, error) {
	n, err := r.c.Read(r.buf)
	return r.buf[:n], time.Now(), err
}
