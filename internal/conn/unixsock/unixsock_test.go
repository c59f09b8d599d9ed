package unixsock

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A socket path is listened on and named as unix:///path; a path whose
// folder is missing, a file in the way and a socket in use are refused
// with what to do.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	addr := "unix://" + filepath.Join(dir, "s.sock")
	ln, err := Listen(addr)
	if err != nil {
		t.Fatal(err)
	}
	if Addr(ln) != addr {
		t.Errorf("addr %q, want %q", Addr(ln), addr)
	}
	c, err := net.Dial("unix", filepath.Join(dir, "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := Listen(addr); err == nil || !strings.Contains(err.Error(), "another process is listening") {
		t.Errorf("socket in use: %v", err)
	}
	ln.Close()
	file := filepath.Join(dir, "plain")
	os.WriteFile(file, nil, 0o644)
	if _, err := Listen("unix://" + file); err == nil || !strings.Contains(err.Error(), "is not a socket") {
		t.Errorf("a file in the way: %v", err)
	}
	missing := filepath.Join(dir, "no", "such")
	if _, err := Listen("unix://" + filepath.Join(missing, "s.sock")); err == nil || !strings.Contains(err.Error(), "the folder "+missing+" for the socket does not exist") {
		t.Errorf("missing folder: %v", err)
	}
}
