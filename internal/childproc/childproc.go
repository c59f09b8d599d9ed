// Package childproc holds what the embedded systems under test that run
// as child processes (the collector, nats-server, a Prometheus agent)
// share: a free loopback port for the child to bind, and the tail of its
// log for error messages.
package childproc

import (
	"bufio"
	"net"
	"os"
	"strings"
)

// FreePort returns a TCP port free on 127.0.0.1 now. Another process may
// take it before the child binds it: callers retry on "address already in
// use".
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Tail returns the last n lines of the log file at path, each indented by
// two spaces, or "(no log)" when it cannot be read.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		lines = append(lines, "  "+sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
