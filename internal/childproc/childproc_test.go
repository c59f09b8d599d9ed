package childproc

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestFreePortBinds(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d is not free: %v", p, err)
	}
	ln.Close()
}

func TestTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		b.WriteString("line " + strconv.Itoa(i) + "\n")
	}
	os.WriteFile(path, []byte(b.String()), 0o644)
	got := strings.Split(Tail(path, 20), "\n")
	if len(got) != 20 || got[0] != "  line 11" || got[19] != "  line 30" {
		t.Errorf("tail: %q", got)
	}
	if Tail(filepath.Join(t.TempDir(), "none"), 20) != "(no log)" {
		t.Error("a missing log")
	}
}
