//go:build !linux

package httpdriver

import (
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
