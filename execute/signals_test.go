package execute

import (
	"net"
	"os"
	"testing"

	"github.com/pipebench/pipebench/internal/testutil"
)

// A pipe or a socket whose reader is gone is closed output; one whose
// reader is there, or a regular file, is not: a SIGPIPE from a
// connection a driver or an observer wrote to does not stop the run.
func TestOutputClosed(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if outputClosed(int(w.Fd())) {
		t.Error("a pipe whose reader is open was taken for closed output")
	}
	r.Close()
	if !outputClosed(int(w.Fd())) {
		t.Error("a pipe whose reader quit was not taken for closed output")
	}

	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if outputClosed(int(f.Fd())) {
		t.Error("a file was taken for closed output")
	}

	c, peer := testutil.ConnPair(t, "unix", t.TempDir()+"/s")
	cf, err := c.(*net.UnixConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	if outputClosed(int(cf.Fd())) {
		t.Error("a socket whose peer is there was taken for closed output")
	}
	peer.Close()
	if !outputClosed(int(cf.Fd())) {
		t.Error("a socket whose peer closed was not taken for closed output")
	}
}
