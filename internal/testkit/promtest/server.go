package promtest

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// Prometheus starts the installed prometheus binary (Debian's package) on
// a free loopback port with the configuration config (YAML) and a
// temporary storage, plus args, waits until it is ready and returns its
// base URL, http://127.0.0.1:PORT; it stops with the test. Without the
// binary the test is skipped, saying why it needed one.
func Prometheus(t testing.TB, config, why string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skipf("prometheus is not installed (apt-get install prometheus): skipping %s", why)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"--config.file=" + file, "--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr, "--log.level=warn"}, args...)...)
	logs := &testutil.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	base := "http://" + addr
	testutil.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "prometheus did not become ready:\n%s", logs)
	return base
}
