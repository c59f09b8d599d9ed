//go:build !linux

package httpdriver

import (
	"net"
	"syscall"
	"time"
)

// canExchange: elsewhere requests are written and answers read with two
// calls on the connection.
const canExchange = false

// exchanger is Linux only.
type exchanger struct{ stamped bool }

func (*exchanger) exchange(syscall.RawConn, []byte, []byte) (int, int, int64, error, error) {
	panic("exchange is Linux only")
}

// stampReceived: kernel receive times are read on Linux only.
func stampReceived(syscall.RawConn) bool { return false }

func arrived(int64, time.Time) time.Time { return time.Time{} }

// stampedReader is Linux only: newStampedReader returns nil elsewhere.
type stampedReader struct{ last time.Time }

func newStampedReader(net.Conn) *stampedReader { return nil }

func (*stampedReader) Read([]byte) (int, error) { panic("stampedReader is Linux only") }
