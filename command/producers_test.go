package command

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// `pipebench producers` serves scrape targets until stopped, then exits 0.
func TestProducersServeUntilStopped(t *testing.T) {
	addr := testutil.FreeAddr(t)
	c := startCommand(t, "producers", "--listen", addr, "--producers", "3", "--metrics", "4", "--series", "5", "--type", "counter")
	var body string
	var err error
	testutil.Eventually(t, 10*time.Second, func() bool {
		var resp *http.Response
		if resp, err = http.Get("http://" + addr + "/producer/2/metrics"); err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return true
	}, "producers never served: %v", err)
	if n := strings.Count(body, `producer="2"`); n != 4*5 {
		t.Errorf("producer 2 serves %d series, want 20:\n%s", n, body)
	}
	if code := c.stop(t); code != 0 {
		t.Errorf("exit %d: %s", code, c.errb.String())
	}
	if !strings.Contains(c.out.String(), "3 producers x 4 metrics x 5 series") {
		t.Errorf("banner: %s", c.out.String())
	}
	if code := runCLI(context.Background(), []string{"producers", "--producers", "0"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("--producers 0: exit %d", code)
	}
}
