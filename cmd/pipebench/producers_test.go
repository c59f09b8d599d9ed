package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// `pipebench producers` serves scrape targets until stopped, then exits 0.
func TestProducersServeUntilStopped(t *testing.T) {
	addr := freeAddr(t)
	c := startCommand(t, "producers", "--listen", addr, "--producers", "3", "--metrics", "4", "--series", "5", "--type", "counter")
	var body string
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/producer/2/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("producers never served: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if n := strings.Count(body, `producer="2"`); n != 4*5 {
		t.Errorf("producer 2 serves %d series, want 20:\n%s", n, body)
	}
	if code := c.stop(t); code != 0 {
		t.Errorf("exit %d: %s", code, c.errb.String())
	}
	if !strings.Contains(c.out.String(), "3 producers x 4 metrics x 5 series") {
		t.Errorf("banner: %s", c.out.String())
	}
	if code := execute(context.Background(), []string{"producers", "--producers", "0"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("--producers 0: exit %d", code)
	}
}
