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
// two spaces, or "(no log)" when it cannot be read. A Go program's crash
// (a panic, a fatal error such as running out of memory) ends its log with
// a dump of every goroutine, which is not what it said: then the lines
// before the crash and the crash's own lines are returned, and the dump is
// left in the file, which the last line names.
func Tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines, crash []string
	inCrash, dumped := false, false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case dumped:
			continue
		case inCrash && (strings.HasPrefix(line, "goroutine ") || strings.HasPrefix(line, "runtime stack:")):
			dumped = true
			continue
		case inCrash:
			if len(crash) < 8 {
				crash = append(crash, "  "+line)
			}
			continue
		case strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") || strings.HasPrefix(line, "runtime: out of memory"):
			inCrash = true
			crash = append(crash, "  "+line)
			continue
		}
		lines = append(lines, "  "+line)
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	if !inCrash {
		return strings.Join(lines, "\n")
	}
	for len(crash) > 0 && strings.TrimSpace(crash[len(crash)-1]) == "" {
		crash = crash[:len(crash)-1]
	}
	keep := max(n-len(crash)-1, 0)
	if len(lines) > keep {
		lines = lines[len(lines)-keep:]
	}
	out := append(lines, crash...)
	if dumped {
		out = append(out, "  (it crashed: the dump of its goroutines is in "+path+")")
	}
	return strings.Join(out, "\n")
}
