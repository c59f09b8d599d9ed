package httpdriver

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
)

// pipelinedConfig is the default configuration with conns connections,
// each pipelining up to depth requests bounded by timeout.
func pipelinedConfig(conns, depth int, timeout time.Duration) *Config {
	c := defaultConfig()
	c.Connections, c.Pipeline, c.Timeout = conns, depth, pipebench.Duration(timeout)
	return c
}

// pipelined builds a driver of pipelinedConfig aimed at target, not yet
// started (its connections open on demand); it is shut down when the test
// ends.
func pipelined(t *testing.T, target string, conns, depth int, timeout time.Duration) *Driver {
	t.Helper()
	d, err := New(*pipelinedConfig(conns, depth, timeout), target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	return d
}

// Many senders share a few pipelined connections to a real net/http
// server: every request is answered once, with its own status, in order.
func TestPipelinedConcurrentSendsGetTheirOwnAnswers(t *testing.T) {
	var got atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Add(1)
		// The status echoes the request, so a mixed-up answer shows.
		if strings.HasSuffix(r.Header.Get("X-Seq"), "7") {
			w.WriteHeader(503)
			return
		}
		w.Header().Set("Transfer-Encoding", "chunked")
		fmt.Fprint(w, "some body the driver must skip")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	d := pipelined(t, "http://"+ln.Addr().String()+"/in", 3, 8, 5*time.Second)
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for g := 0; g < 40; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				seq := g*25 + i
				b := pipebench.Batch{Body: []byte("{}"), Count: 1, Headers: []pipebench.Header{{Name: "X-Seq", Value: fmt.Sprint(seq)}}}
				o := d.Send(context.Background(), &b)
				want := pipebench.ClassOK
				if seq%10 == 7 {
					want = pipebench.ClassRefused
				}
				if o.Class != want {
					wrong.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if got.Load() != 1000 || wrong.Load() != 0 {
		t.Fatalf("server saw %d requests, %d answers went to the wrong request or failed", got.Load(), wrong.Load())
	}
}

// rawServer answers each connection with fn, on loopback.
func rawServer(t *testing.T, fn func(c net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Serve(t, ln, func(c net.Conn) { go func() { defer c.Close(); fn(c) }() })
	return "http://" + ln.Addr().String() + "/"
}

// readRequest consumes one request the driver wrote (headers and body).
func readRequest(br *bufio.Reader) error {
	n := 0
	for {
		l, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		if l == "\r\n" {
			break
		}
		fmt.Sscanf(l, "Content-Length: %d", &n)
	}
	_, err := br.Discard(n)
	return err
}

func TestPipelinedConnectionCloseAndReconnect(t *testing.T) {
	// HTTP/1.0-style answers: a body until close, then "Connection: close".
	target := rawServer(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if readRequest(br) != nil {
			return
		}
		fmt.Fprint(c, "HTTP/1.1 202 Accepted\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
	})
	d := pipelined(t, target, 1, 4, 2*time.Second)
	for i := 0; i < 5; i++ {
		b := pipebench.Batch{Body: []byte("x"), Count: 1}
		if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassOK || o.Code != 202 {
			t.Fatalf("send %d after the server closed: %+v", i, o)
		}
	}
}

func TestPipelinedTimeoutAndRefused(t *testing.T) {
	silent := rawServer(t, func(c net.Conn) { time.Sleep(3 * time.Second) })
	d := pipelined(t, silent, 1, 4, 300*time.Millisecond)
	b := pipebench.Batch{Body: []byte("x"), Count: 1}
	start := time.Now()
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassTimeout {
		t.Fatalf("a server that never answers: %+v", o)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("the timeout of 300ms took %s", el)
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	d2 := pipelined(t, "http://"+addr+"/", 1, 4, time.Second)
	if o := d2.Send(context.Background(), &b); o.Class != pipebench.ClassRefused || !o.Unreached || o.Detail != "connection refused" || !strings.Contains(o.Message, "refused") {
		t.Fatalf("nothing listening: %+v", o)
	}
}

func TestPipelinedMalformedAnswer(t *testing.T) {
	target := rawServer(t, func(c net.Conn) {
		if readRequest(bufio.NewReader(c)) == nil {
			fmt.Fprint(c, "SMTP ready\r\n\r\n")
		}
	})
	d := pipelined(t, target, 1, 4, time.Second)
	b := pipebench.Batch{Body: []byte("x"), Count: 1}
	if o := d.Send(context.Background(), &b); o.Class != pipebench.ClassError || !o.Unreached || o.Detail != "protocol mismatch" || !strings.Contains(o.Message, "malformed status line") {
		t.Fatalf("a non-HTTP answer: %+v", o)
	}
}
