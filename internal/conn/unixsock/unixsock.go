// Package unixsock is how the sinks and systems under test listen on
// either TCP (host:port) or a Unix domain socket (unix:///path/to.sock),
// and name the address they listen on in the same form; HTTPClient is how
// a client reaches an HTTP server on such a socket.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
)

// Prefix starts a Unix socket address.
const Prefix = "unix://"

// maxPath is the longest socket path Linux accepts (sun_path less its NUL).
const maxPath = 107

// Path returns the socket path of a unix:///path address, and whether addr
// is one.
func Path(addr string) (string, bool) {
	return strings.CutPrefix(addr, Prefix)
}

// Check says what is wrong with addr as a listen address: it must be
// host:port or unix:///absolute/path.sock of at most 107 bytes.
func Check(addr string) error {
	if p, ok := Path(addr); ok {
		switch {
		case !strings.HasPrefix(p, "/"):
			return fmt.Errorf("%q is not unix:///absolute/path.sock (three slashes: unix:// and the path's own)", addr)
		case len(p) > maxPath:
			return fmt.Errorf("%q: a Unix socket path holds at most %d bytes; choose a shorter path", addr, maxPath)
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%q is not host:port or unix:///path.sock", addr)
	}
	return nil
}

// Listen listens on addr: a Unix domain socket for unix:///path (a socket
// file left there by an earlier run is removed first; any other file is
// not), else TCP.
func Listen(addr string) (net.Listener, error) {
	p, ok := Path(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if err := Check(addr); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(p); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it or choose another path", p)
		}
		if c, err := net.Dial("unix", p); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another process is listening on this socket", p)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	if dir := filepath.Dir(p); dir != "" {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("the folder %s for the socket does not exist; create it or choose another path", dir)
		}
	}
	return net.Listen("unix", p)
}

// Addr names where ln listens: unix:///path for a Unix socket, else
// host:port.
func Addr(ln net.Listener) string {
	if a, ok := ln.Addr().(*net.UnixAddr); ok {
		return Prefix + a.Name
	}
	return ln.Addr().String()
}

// IsUnix reports whether ln is a Unix socket listener.
func IsUnix(ln net.Listener) bool {
	_, ok := ln.Addr().(*net.UnixAddr)
	return ok
}
