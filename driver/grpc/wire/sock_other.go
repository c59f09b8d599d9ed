//go:build !linux

package wire

import (
	"net"
	"syscall"
)

// rawConn: elsewhere than Linux every connection is read and written
// through net.Conn (a write may then wait for the socket).
func rawConn(net.Conn) syscall.RawConn { return nil }

func recvStamped(int, []byte, bool) (int, int64, error) { panic("wire: raw reads are Linux only") }

func writeRaw(uintptr, []byte) (int, error) { panic("wire: raw writes are Linux only") }
