// Package promscrapedriver feeds a scraping metric agent (Prometheus in
// agent mode, a collector's prometheus receiver) from the runner's pacing:
// it is a Prometheus scrape target, and Send hands the batch's items to
// the next scrape. Each scrape serves the items handed over since the last
// one, item k of the scrape as the sample
//
//	pb_item{pipebench="seq",slot="k"} SEQ SENT_MILLIS
//
// (value: the sequence number; explicit timestamp: the send time), which
// the remote-write sink matches (payload/promrw's convention) behind the
// agent: delivered, lost, duplicates and end-to-end latency, scrape interval
// included. Series are bounded by the items per scrape (slots are reused).
// Items the agent does not collect pile up to max_pending; past it, Send
// answers refused.
package promscrapedriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/conncount"
	"github.com/pipebench/pipebench/payload/promrw"
)

// Metric is the name of the served series.
const Metric = "pb_item"

// Config configures the scrape-target driver.
type Config struct {
	// Listen is the host:port to serve /metrics on; empty means the
	// runner's target (the address the embedded agent scrapes), else an
	// ephemeral loopback port.
	Listen string `yaml:"listen" json:"listen,omitempty"`
	// MaxPending bounds the items waiting for a scrape.
	MaxPending int `yaml:"max_pending" json:"max_pending"`
}

// DefaultConfig waits for at most 1,000,000 items.
func DefaultConfig() *Config { return &Config{MaxPending: 1000000} }

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
		}
	}
	if c.MaxPending < 1 || c.MaxPending > 100000000 {
		errs = append(errs, fmt.Errorf("max_pending: %d is outside 1..100000000", c.MaxPending))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "prometheus-scrape" driver. It takes
// any generator's batches (only their sequence numbers are used).
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("prometheus-scrape", "a Prometheus scrape target serving each batch's items to the next scrape (for a scraping agent in front of the remote-write sink)", DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			listen := c.Listen
			if listen == "" {
				listen = env.Target
			}
			return New(*c, listen)
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes, pipebench.PayloadOTLPMetrics, pipebench.PayloadOTLPTraces, pipebench.PayloadOTLPLogs, pipebench.PayloadLogLines})
}

// item is one item waiting for a scrape.
type item struct {
	seq  uint64
	sent int64 // unix milliseconds
}

// Driver is the scrape target. Send is safe for concurrent use.
type Driver struct {
	cfg     Config
	listen  string
	ln      net.Listener
	srv     *http.Server
	done    chan struct{}
	mu      sync.Mutex
	pending []item
	spare   []item
	scrapes atomic.Int64
	open    conncount.Counter // the scrapers' connections
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// New returns a driver that will serve on listen (host:port; empty: an
// ephemeral loopback port) once started.
func New(cfg Config, listen string) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	if _, _, err := net.SplitHostPort(listen); err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("prometheus-scrape driver: %q is not host:port", listen), "give listen: 127.0.0.1:PORT, the address the agent scrapes", nil)
	}
	return &Driver{cfg: cfg, listen: listen, done: make(chan struct{})}, nil
}

// Start listens and serves /metrics.
func (d *Driver) Start(context.Context) error {
	ln, err := net.Listen("tcp", d.listen)
	if err != nil {
		return pipebench.UsageError(fmt.Sprintf("prometheus-scrape driver: cannot listen on %s", d.listen), "choose a free address with listen", err)
	}
	d.ln = ln
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", d.scrape)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: d.open.ConnState}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln)
	}()
	return nil
}

// Endpoint is the scrape URL.
func (d *Driver) Endpoint() string {
	if d.ln == nil {
		return ""
	}
	return "http://" + d.ln.Addr().String() + "/metrics"
}

// Scrapes is the number of scrapes answered.
func (d *Driver) Scrapes() int64 { return d.scrapes.Load() }

// OpenConnections implements pipebench.ConnectionReporter: the scrapers'
// connections open now.
func (d *Driver) OpenConnections() int { return d.open.Open() }

// Send implements pipebench.Driver: the batch's items wait for the next
// scrape. It is refused when max_pending items already wait.
func (d *Driver) Send(_ context.Context, b *pipebench.Batch) pipebench.Outcome {
	now := time.Now().UnixMilli()
	d.mu.Lock()
	if len(d.pending)+b.Count > d.cfg.MaxPending {
		n := len(d.pending)
		d.mu.Unlock()
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "nobody scrapes",
			Message: fmt.Sprintf("%d items wait for a scrape (max_pending %d): is the agent scraping %s?", n, d.cfg.MaxPending, d.Endpoint())}
	}
	for i := 0; i < b.Count; i++ {
		d.pending = append(d.pending, item{seq: b.Seq + uint64(i), sent: now})
	}
	d.mu.Unlock()
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// scrape serves and forgets the items waiting.
func (d *Driver) scrape(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	items := d.pending
	d.pending, d.spare = d.spare[:0], nil
	d.mu.Unlock()
	buf := make([]byte, 0, 64+len(items)*64)
	buf = append(buf, "# TYPE "+Metric+" gauge\n"...)
	for k, it := range items {
		buf = append(buf, Metric+`{`+promrw.SeqLabel+`="seq",slot="`...)
		buf = strconv.AppendInt(buf, int64(k), 10)
		buf = append(buf, `"} `...)
		buf = strconv.AppendUint(buf, it.seq, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendInt(buf, it.sent, 10)
		buf = append(buf, '\n')
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	w.Write(buf)
	d.scrapes.Add(1)
	d.mu.Lock()
	if cap(items) <= 1<<20 {
		d.spare = items[:0]
	}
	d.mu.Unlock()
}

// Shutdown stops serving; items never scraped are lost, as in a real
// target that goes away.
func (d *Driver) Shutdown(ctx context.Context) error {
	if d.srv == nil {
		return nil
	}
	err := d.srv.Shutdown(ctx)
	if err != nil {
		d.srv.Close()
	}
	<-d.done
	return err
}
