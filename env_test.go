package pipebench

import (
	"bytes"
	"log/slog"
	"os"
	"testing"
)

// An Env without a directory or a logger gives the temporary directory
// and a logger that writes nothing; with them, gives them.
func TestEnvDefaults(t *testing.T) {
	var e Env
	if e.ScratchDir() != os.TempDir() || e.Log() == nil {
		t.Fatalf("empty Env: dir %q, logger %v", e.ScratchDir(), e.Log())
	}
	e.Log().Error("nowhere")
	var b bytes.Buffer
	e = Env{Dir: "/run/x", Logger: slog.New(slog.NewTextHandler(&b, nil))}
	e.Log().Info("here")
	if e.ScratchDir() != "/run/x" || !bytes.Contains(b.Bytes(), []byte("here")) {
		t.Errorf("dir %q, log %q", e.ScratchDir(), b.String())
	}
}
