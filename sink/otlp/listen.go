package otlpsink

import (
	"net"

	"github.com/pipebench/pipebench/internal/conn/unixsock"
)

// listen opens a listener for grpc_listen or http_listen: host:port, or a
// Unix domain socket for unix:///path/to.sock.
func listen(addr string) (net.Listener, error) { return unixsock.Listen(addr) }

// checkListen says what is wrong with a listen address.
func checkListen(addr string) error { return unixsock.Check(addr) }

// grpcAddr names the gRPC listener as a gRPC client dials it: host:port,
// or unix:///path.sock.
func grpcAddr(ln net.Listener) string { return unixsock.Addr(ln) }

// httpAddr names the HTTP listener: the base URL http://host:port, or on a
// Unix socket the socket, unix:///path.sock (POST /v1/traces etc. on it).
func httpAddr(ln net.Listener) string {
	if unixsock.IsUnix(ln) {
		return unixsock.Addr(ln)
	}
	return "http://" + ln.Addr().String()
}
