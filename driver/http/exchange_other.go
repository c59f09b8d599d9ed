//go:build !linux

package httpdriver

import "syscall"

// canExchange: elsewhere requests are written and answers read with two
// calls on the connection.
const canExchange = false

func exchange(syscall.RawConn, []byte, []byte) (int, int, error, error) {
	panic("exchange is Linux only")
}
