package wire

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

func startServer(t *testing.T) *server.Server {
	t.Helper()
	return natstest.Start(t, &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
}

type got struct {
	subject, hdr, data string
}

// Messages to the subscription, with and without headers, smaller and
// larger than the read buffer, reach OnMsg whole; what the connection
// publishes (PUB and HPUB, with a reply subject) reaches a nats.go
// subscriber whole.
func TestMessagesBothWays(t *testing.T) {
	s := startServer(t)
	var mu sync.Mutex
	var msgs []got
	f := NewFlusher(1, 1)
	c, err := Dial(Options{URLs: []string{s.ClientURL()}, Name: "wire-test", Subscribe: "in.*", Flusher: f,
		OnMsg: func(subject, hdr, data []byte) {
			mu.Lock()
			msgs = append(msgs, got{string(subject), string(hdr), string(data)})
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(); <-c.Done(); f.Stop() }()
	if !c.Connected() || c.MaxPayload() != 1<<20 {
		t.Fatalf("connected %t, max_payload %d", c.Connected(), c.MaxPayload())
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	big := strings.Repeat("x", 5000)
	nc.Publish("in.a", []byte("small"))
	nc.Publish("in.b", []byte(big))
	m := nats.NewMsg("in.c")
	m.Header.Set("K", "v")
	m.Data = []byte(big + "y")
	nc.PublishMsg(m)
	nc.Publish("in.d", nil)
	nc.Flush()
	testutil.Eventually(t, 5*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(msgs) == 4 }, "4 messages")
	mu.Lock()
	want := []got{{"in.a", "", "small"}, {"in.b", "", big}, {"in.c", "NATS/1.0\r\nK: v\r\n\r\n", big + "y"}, {"in.d", "", ""}}
	for i, w := range want {
		if msgs[i] != w {
			t.Errorf("message %d: %.60q, want %.60q", i, msgs[i], w)
		}
	}
	mu.Unlock()

	sub, err := nc.SubscribeSync("out.>")
	if err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	if err := c.Publish("out.1", nil, nil, []byte("plain")); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish("out.2", []byte("rep.1"), []byte("NATS/1.0\r\nA: b\r\n\r\n"), []byte(big)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Flush():
	case <-time.After(5 * time.Second):
		t.Fatal("no PONG")
	}
	m1, err := sub.NextMsg(5 * time.Second)
	if err != nil || string(m1.Data) != "plain" || m1.Header != nil {
		t.Fatalf("first: %v %v", m1, err)
	}
	m2, err := sub.NextMsg(5 * time.Second)
	if err != nil || !bytes.Equal(m2.Data, []byte(big)) || m2.Header.Get("A") != "b" || m2.Reply != "rep.1" {
		t.Fatalf("second: %v %v", m2, err)
	}
	if err := c.Publish("out.3", nil, nil, make([]byte, 1<<20+1)); err != ErrMaxPayload {
		t.Errorf("a message above max_payload: %v", err)
	}
}

// A closed connection refuses publishes and ends its goroutine.
func TestClose(t *testing.T) {
	s := startServer(t)
	f := NewFlusher(1, 1)
	defer f.Stop()
	c, err := Dial(Options{URLs: []string{s.ClientURL()}, Flusher: f})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the connection's goroutine did not end")
	}
	if err := c.Publish("x", nil, nil, []byte("y")); err != ErrClosed {
		t.Errorf("publish after Close: %v", err)
	}
	testutil.Eventually(t, 5*time.Second, func() bool { return s.NumClients() == 0 }, "the server sees the connection closed")
}
