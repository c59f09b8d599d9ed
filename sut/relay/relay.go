// Package relay is a small HTTP event gateway, run in-process as the
// embedded system under test of the zero-setup quickstart: it accepts events
// into a bounded queue (answering 202, or 503 when the queue is full) and
// workers forward them unchanged to the sink, retrying failures with
// exponential backoff, like a real gateway's retry_on_failure.
//
// It runs inside the pipebench process, so its memory and CPU are shared
// with the generator's; the otelcol SUT runs as a separate process instead.
package relay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpserve"
)

// Config configures the relay.
type Config struct {
	Listen          string             `yaml:"listen" json:"listen"`
	QueueSize       int                `yaml:"queue_size" json:"queue_size"`
	Workers         int                `yaml:"workers" json:"workers"`
	MaxRetries      int                `yaml:"max_retries" json:"max_retries"` // 0: retry until shutdown
	RetryBackoffMax pipebench.Duration `yaml:"retry_backoff_max" json:"retry_backoff_max"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("queue_size: must be at least 1"))
	}
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("workers: must be at least 1"))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("max_retries: must be 0 (unlimited) or more"))
	}
	if c.RetryBackoffMax <= 0 {
		errs = append(errs, fmt.Errorf("retry_backoff_max: must be more than 0"))
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Listen: "127.0.0.1:0", QueueSize: 10000, Workers: 8, RetryBackoffMax: pipebench.Duration(2 * time.Second)}
}

// Factory returns the factory of the "relay" SUT.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("relay", "in-process HTTP event gateway: bounded queue, retries, Prometheus metrics", defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			if env.Target == "" {
				return nil, pipebench.UsageError("the relay has nowhere to forward to", "add a sink to the scenario", nil)
			}
			return New(*c, env.Target), nil
		})
}

type request struct {
	body    []byte
	headers http.Header
	items   int
}

// Relay is the gateway. Start once, Shutdown once.
type Relay struct {
	cfg    Config
	target string
	queue  chan request
	srv    *httpserve.Server
	client *http.Client
	stop   chan struct{}
	wg     sync.WaitGroup

	reg                                             *prometheus.Registry
	accepted, refused, sent, failed, dropped, retry prometheus.Counter
	queueSize                                       prometheus.GaugeFunc
}

var _ pipebench.SUT = (*Relay)(nil)

// New returns a relay forwarding to target; it is not started.
func New(cfg Config, target string) *Relay {
	r := &Relay{cfg: cfg, target: target, queue: make(chan request, cfg.QueueSize),
		stop: make(chan struct{}), reg: prometheus.NewRegistry()}
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Workers, MaxConnsPerHost: cfg.Workers}}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
		r.reg.MustRegister(c)
		return c
	}
	r.accepted = counter("relay_receiver_accepted_items", "Items accepted into the queue.")
	r.refused = counter("relay_receiver_refused_items", "Items refused because the queue was full.")
	r.sent = counter("relay_exporter_sent_items", "Items forwarded and accepted downstream.")
	r.failed = counter("relay_exporter_send_failed_items", "Items whose forward attempt failed (each retry counts).")
	r.dropped = counter("relay_exporter_dropped_items", "Items given up on after max_retries or at shutdown.")
	r.retry = counter("relay_exporter_retries", "Forward attempts retried.")
	r.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "relay_exporter_queue_size", Help: "Requests waiting in the queue."}, func() float64 { return float64(len(r.queue)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "relay_exporter_queue_capacity", Help: "Queue capacity in requests."}, func() float64 { return float64(cap(r.queue)) }),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewGoCollector(),
	)
	return r
}

// Start listens and starts the workers.
func (r *Relay) Start(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/", r.receive)
	srv, err := httpserve.Listen(r.cfg.Listen, mux)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	r.srv = srv
	for i := 0; i < r.cfg.Workers; i++ {
		r.wg.Add(1)
		go r.worker()
	}
	return nil
}

// Endpoint is where events are posted.
func (r *Relay) Endpoint() string { return r.srv.URL("/events") }

// MetricsURL is the relay's Prometheus endpoint.
func (r *Relay) MetricsURL() string { return r.srv.URL("/metrics") }

// Instances implements pipebench.SUT: the relay is this process.
func (r *Relay) Instances() []pipebench.Instance {
	return []pipebench.Instance{{Name: "relay-0", PID: os.Getpid(), MetricsURL: r.MetricsURL()}}
}

func (r *Relay) receive(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	items := 1
	if n, err := strconv.Atoi(req.Header.Get("Pipebench-Count")); err == nil && n > 0 {
		items = n
	}
	h := http.Header{}
	for k, v := range req.Header {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "pipebench-") || strings.HasPrefix(lk, "ce-") || lk == "content-type" {
			h[k] = v
		}
	}
	select {
	case r.queue <- request{body: body, headers: h, items: items}:
		r.accepted.Add(float64(items))
		w.WriteHeader(http.StatusAccepted)
	default:
		r.refused.Add(float64(items))
		http.Error(w, "queue full", http.StatusServiceUnavailable)
	}
}

func (r *Relay) worker() {
	defer r.wg.Done()
	for {
		select {
		case <-r.stop:
			return
		case q := <-r.queue:
			r.forward(q)
		}
	}
}

// forward sends q until it is accepted, retries run out, or the relay stops.
func (r *Relay) forward(q request) {
	backoff := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest(http.MethodPost, r.target, bytes.NewReader(q.body))
		req.Header = q.headers.Clone()
		resp, err := r.client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 300 {
				r.sent.Add(float64(q.items))
				return
			}
		}
		r.failed.Add(float64(q.items))
		if r.cfg.MaxRetries > 0 && attempt >= r.cfg.MaxRetries {
			r.dropped.Add(float64(q.items))
			return
		}
		r.retry.Inc()
		select {
		case <-r.stop:
			r.dropped.Add(float64(q.items))
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, r.cfg.RetryBackoffMax.D())
	}
}

// Shutdown stops accepting, gives the queue until ctx is done to flush,
// then stops the workers; what is still queued is counted as dropped.
func (r *Relay) Shutdown(ctx context.Context) error {
	if r.srv == nil {
		return nil
	}
	err := r.srv.Shutdown(ctx)
	for len(r.queue) > 0 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	close(r.stop)
	r.wg.Wait()
	for {
		select {
		case q := <-r.queue:
			r.dropped.Add(float64(q.items))
		default:
			return err
		}
	}
}
