package execute

import (
	"io"
	"net"
	"os"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
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
	closedWithPeer(t, w, r, "a pipe whose reader")

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
	closedWithPeer(t, cf, peer, "a socket whose peer")
}

// closedWithPeer checks that out (what names its kind and its peer) is
// closed output only once its peer is closed.
func closedWithPeer(t *testing.T, out *os.File, peer io.Closer, what string) {
	t.Helper()
	if outputClosed(int(out.Fd())) {
		t.Error(what + " is there was taken for closed output")
	}
	peer.Close()
	if !outputClosed(int(out.Fd())) {
		t.Error(what + " closed was not taken for closed output")
	}
}
