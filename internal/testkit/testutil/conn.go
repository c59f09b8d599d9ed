package testutil

import (
	"net"
	"testing"
)

// ConnPair listens on network and address (such as "tcp", "127.0.0.1:0",
// or "unix" and a socket path), dials it and accepts: the dialled
// connection and the accepted one, both closed when the test ends.
func ConnPair(tb testing.TB, network, address string) (dialled, accepted net.Conn) {
	tb.Helper()
	ln, err := net.Listen(network, address)
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	dialled, err = net.Dial(network, ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { dialled.Close() })
	accepted, err = ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { accepted.Close() })
	return dialled, accepted
}
