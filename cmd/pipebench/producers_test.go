package main

import (
	"bytes"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- execute(ctx, []string{"producers", "--listen", addr, "--producers", "3", "--metrics", "4", "--series", "5", "--type", "counter"}, &out, &errb)
	}()
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
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("producers did not stop")
	}
	if !strings.Contains(out.String(), "3 producers x 4 metrics x 5 series") {
		t.Errorf("banner: %s", out.String())
	}
	if code := execute(context.Background(), []string{"producers", "--producers", "0"}, io.Discard, &errb); code != 2 {
		t.Errorf("--producers 0: exit %d", code)
	}
}
