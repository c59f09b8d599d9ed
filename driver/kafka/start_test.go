package kafkadriver

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// A port that is not a Kafka broker's fails the start as unreached (the
// run is then invalid, never COMPLETED with nothing accepted): an HTTP
// server, a server that closes every connection at once, one that answers
// bytes that are no Kafka answer. Each is a real listener on loopback.
func TestNotKafkaIsUnreached(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer web.Close()
	for name, addr := range map[string]string{
		"http":    strings.TrimPrefix(web.URL, "http://"),
		"closes":  serve(t, func(c net.Conn) { c.Close() }),
		"garbage": serve(t, func(c net.Conn) { c.Write([]byte("SSH-2.0-OpenSSH_9.6\r\n")); time.Sleep(time.Second); c.Close() }),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := config(addr, "events")
			cfg.Timeout = pipebench.Duration(3 * time.Second)
			d, err := New(cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			err = d.Start(context.Background())
			if err == nil {
				d.Shutdown(context.Background())
				t.Fatalf("a driver aimed at %s (%s) started", addr, name)
			}
			if !pipebench.IsUnreached(err) || !strings.Contains(err.Error(), "not as a Kafka broker") || !strings.Contains(err.Error(), addr) {
				t.Errorf("want an unreached start naming %s and saying it is no Kafka broker, got: %v", addr, err)
			}
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("the start took %s", took)
			}
		})
	}
}

// serve accepts connections on a loopback port until the test ends,
// handing each to handle, and returns its address.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return ln.Addr().String()
}

// A topic the brokers do not have fails the start with a usage error that
// names it (the brokers create no topic for a producer); one deleted
// during the run makes each send an error whose detail names it.
func TestMissingTopicIsNamed(t *testing.T) {
	b := kafkatest.Get(t)
	cfg := config(b.Bootstrap(), "no-such-topic")
	d, err := New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	err = d.Start(context.Background())
	if err == nil {
		d.Shutdown(context.Background())
		t.Fatal("a driver aimed at a topic that does not exist started")
	}
	var pe *pipebench.Error
	if !errors.As(err, &pe) || pe.Code != pipebench.ExitUsage || !strings.Contains(err.Error(), `"no-such-topic"`) || pipebench.IsUnreached(err) {
		t.Errorf("want a usage error naming the topic, got: %v", err)
	}

	topic := b.Topic(t, "gone", 1, 1, nil)
	cfg = config(b.Bootstrap(), topic)
	cfg.Timeout = pipebench.Duration(15 * time.Second) // past franz-go's own give-up on a topic it cannot find
	d = newDriver(t, cfg)
	g := newGen(t, nil)
	bt := g.Next(1, 1, time.Now())
	if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
		t.Fatalf("before the topic was deleted: %+v", o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.Admin(t).DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	var o pipebench.Outcome
	seq := uint64(2)
	testutil.Eventually(t, 60*time.Second, func() bool {
		bt := g.Next(seq, 1, time.Now())
		seq++
		o = d.Send(context.Background(), &bt)
		return o.Class != pipebench.ClassOK
	}, "a send fails once the topic is deleted")
	if o.Class != pipebench.ClassError || o.Detail != `no topic "`+topic+`"` {
		t.Errorf("a send to a deleted topic: %+v, want an error whose detail names the topic", o)
	}
}
