package wire

import (
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/pipebench/pipebench/internal/testkit/natstest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
)

// twoNodes starts two nats-servers routed into one cluster, each with a
// short lame duck mode.
func twoNodes(t *testing.T) (a, b *server.Server) {
	t.Helper()
	opts := func(name string) *server.Options {
		return &server.Options{ServerName: name, Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
			Cluster:          server.ClusterOpts{Name: "wire", Host: "127.0.0.1", Port: -1},
			LameDuckDuration: 5 * time.Second, LameDuckGracePeriod: time.Second}
	}
	a = natstest.Start(t, opts("a"))
	ob := opts("b")
	ob.Routes = []*url.URL{{Scheme: "nats-route", Host: a.ClusterAddr().String()}}
	b = natstest.Start(t, ob)
	testutil.Eventually(t, 10*time.Second, func() bool { return a.NumRoutes() > 0 && b.NumRoutes() > 0 }, "the two servers did not route")
	return a, b
}

// A connection given one server of a cluster learns the others from INFO's
// connect_urls; when its server enters lame duck mode it moves to another
// at once (well before the server closes its clients), does not go back,
// and publishes on as before.
func TestDiscoveryAndLameDuck(t *testing.T) {
	a, b := twoNodes(t)
	f := NewFlusher(1, 1)
	c, err := Dial(Options{URLs: []string{a.ClientURL()}, Name: "ldm-test", Flusher: f, ReconnectWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(); <-c.Done(); f.Stop() }()
	bHost := strings.TrimPrefix(b.ClientURL(), "nats://")
	testutil.Eventually(t, 10*time.Second, func() bool { return strings.Contains(strings.Join(c.Hosts(), ","), bHost) },
		"the connection knows only %v, not %s", c.Hosts(), bHost)
	if c.Server() != strings.TrimPrefix(a.ClientURL(), "nats://") {
		t.Fatalf("connected to %s", c.Server())
	}
	sub, err := nats.Connect(b.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var got atomic.Int64
	if _, err := sub.Subscribe("ldm.x", func(*nats.Msg) { got.Add(1) }); err != nil {
		t.Fatal(err)
	}
	sub.Flush()
	start := time.Now()
	go a.LameDuckShutdown()
	// Moved within the grace period, long before the 5 s in which the
	// server closes its clients, and without the 2 s reconnect pause.
	testutil.Eventually(t, 3*time.Second, func() bool { return c.Connected() && c.Server() == bHost }, "still on %s (connected %t)", c.Server(), c.Connected())
	if took := time.Since(start); took > 2500*time.Millisecond || c.LameDucks() != 1 {
		t.Errorf("moved after %s, %d lame duck notices honoured", took, c.LameDucks())
	}
	for i := 0; i < 100; i++ {
		if err := c.Publish("ldm.x", nil, nil, []byte("after")); err != nil {
			t.Fatal(err)
		}
	}
	<-c.Flush()
	testutil.Eventually(t, 5*time.Second, func() bool { return got.Load() == 100 }, "received %d of 100 through the other server", got.Load())
	if c.Server() != bHost {
		t.Errorf("went back to %s", c.Server())
	}
}

// NoDiscovery keeps a connection to its own URLs.
func TestNoDiscovery(t *testing.T) {
	a, _ := twoNodes(t)
	f := NewFlusher(1, 1)
	c, err := Dial(Options{URLs: []string{a.ClientURL()}, Flusher: f, NoDiscovery: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { c.Close(); <-c.Done(); f.Stop() }()
	if h := c.Hosts(); len(h) != 1 {
		t.Errorf("hosts %v, want only the one given", h)
	}
}
