// Package natssink is the NATS test backend: a durable JetStream pull
// consumer with explicit acks, or a core NATS subscriber. It matches the
// sequence number every message carries (payload.Extract's convention, in
// NATS headers or in the JSON body), counts redeliveries apart, plays a
// slow subscriber (added latency, a processing rate limit) and pauses the
// consumer on the server during a phase's outage windows.
//
// Without a url it waits to be told where to consume: its Endpoint is a
// loopback HTTP address to which the embedded jetstream SUT posts its
// client URL and stream once the stream exists.
package natssink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpserve"
	"github.com/pipebench/pipebench/internal/conn/natsattach"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sink/fault"
)

// AttachPath is the path of the endpoint a sink without a url serves: the
// jetstream SUT posts {"url", "stream"} to a target ending in it.
const AttachPath = natsattach.Path

// Config configures the NATS sink.
type Config struct {
	// URL of the server; empty waits for the embedded SUT to attach.
	URL string `yaml:"url" json:"url,omitempty"`
	// Mode is jetstream (a durable pull consumer) or core (a subscriber).
	Mode string `yaml:"mode" json:"mode"`
	// Stream to consume (jetstream); the SUT's stream when it attaches.
	Stream string `yaml:"stream" json:"stream"`
	// Durable is the consumer's name.
	Durable string `yaml:"durable" json:"durable"`
	// Subject filters the consumer (jetstream; empty, the default, takes
	// the whole stream) or is the subscription (core).
	Subject string `yaml:"subject" json:"subject"`
	// AckWait is how long the server waits for an ack before redelivering.
	AckWait pipebench.Duration `yaml:"ack_wait" json:"ack_wait"`
	// MaxAckPending bounds the messages delivered and not yet acked.
	MaxAckPending int `yaml:"max_ack_pending" json:"max_ack_pending"`
	// Batch is how many messages a pull buffers in the client.
	Batch int `yaml:"batch" json:"batch"`
	// Workers process messages in parallel (each its own pull loop).
	Workers int `yaml:"workers" json:"workers"`
	// NakDelay is the redelivery delay of a message failed by a fault.
	NakDelay pipebench.Duration `yaml:"nak_delay" json:"nak_delay"`
	// Listen is where a sink without a url waits for the SUT to attach.
	Listen string `yaml:"listen" json:"listen"`
	// Replicas is the consumer's number of copies on a cluster (0: as
	// many as the stream's). A consumer of one replica lives on one node:
	// when that node hangs, nothing is dispatched until it answers again.
	Replicas int `yaml:"replicas" json:"replicas,omitempty"`
}

// DefaultConfig returns the defaults: a durable pull consumer "pipebench"
// on stream EVENTS, 30 s ack wait, 1 worker.
func DefaultConfig() *Config {
	return &Config{Mode: "jetstream", Stream: "EVENTS", Durable: "pipebench",
		AckWait: pipebench.Duration(30 * time.Second), MaxAckPending: 20000, Batch: 500, Workers: 1,
		NakDelay: pipebench.Duration(500 * time.Millisecond), Listen: "127.0.0.1:0"}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	for _, u := range strings.Split(c.URL, ",") {
		if u = strings.TrimSpace(u); u != "" && !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			errs = append(errs, fmt.Errorf("url: %q is not a nats:// URL", u))
		}
	}
	if c.Mode != "jetstream" && c.Mode != "core" {
		errs = append(errs, fmt.Errorf("mode: %q is not jetstream or core", c.Mode))
	}
	if c.Mode == "jetstream" && (c.Stream == "" || strings.ContainsAny(c.Stream, ". *>")) {
		errs = append(errs, fmt.Errorf("stream: %q is not a stream name", c.Stream))
	}
	if c.Mode == "jetstream" && (c.Durable == "" || strings.ContainsAny(c.Durable, ". *>")) {
		errs = append(errs, fmt.Errorf("durable: %q is not a consumer name", c.Durable))
	}
	if c.Mode == "core" && c.Subject == "" {
		errs = append(errs, fmt.Errorf("subject: a core subscriber needs a subject, such as events.>"))
	}
	if c.AckWait < pipebench.Duration(time.Second) {
		errs = append(errs, fmt.Errorf("ack_wait: must be at least 1s"))
	}
	if c.MaxAckPending < 1 {
		errs = append(errs, fmt.Errorf("max_ack_pending: must be at least 1"))
	}
	if c.Batch < 1 {
		errs = append(errs, fmt.Errorf("batch: must be at least 1"))
	}
	if c.Workers < 1 || c.Workers > 256 {
		errs = append(errs, fmt.Errorf("workers: %d is outside 1..256", c.Workers))
	}
	if c.NakDelay < 0 {
		errs = append(errs, fmt.Errorf("nak_delay: must be 0 or more"))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("replicas: %d is outside 0..5", c.Replicas))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "nats" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	return pipebench.NewFactory("nats",
		"NATS backend: a durable JetStream pull consumer (explicit acks, slow-subscriber faults, pauses) or a core subscriber",
		DefaultConfig,
		func(c *Config, _ pipebench.Env) (pipebench.Sink, error) { return New(*c), nil })
}

// Sink consumes from NATS. Start once, Shutdown once.
type Sink struct {
	cfg Config
	inj *fault.Injector
	rec pipebench.Arrivals
	// attachSrv serves AttachPath when the sink waits to be told where to
	// consume.
	attachSrv *httpserve.Server

	mu       sync.Mutex
	nc       *nats.Conn
	js       js.JetStream
	stream   string
	ccs      []js.ConsumeContext
	sub      *nats.Subscription
	attached chan struct{}
	policy   pipebench.FaultPolicy
	phase    time.Time
	paused   bool // the consumer is paused on the server
	outage   bool // by the outage schedule (not by Pause)
	stop     chan struct{}
	loopWG   sync.WaitGroup

	shutOnce sync.Once

	limMu    sync.Mutex
	nextSlot time.Time

	delivered   atomic.Int64
	redelivered atomic.Int64
	faulted     atomic.Int64
}

var (
	_ pipebench.Sink        = (*Sink)(nil)
	_ pipebench.FaultSetter = (*Sink)(nil)
)

// New returns a sink that is not started.
func New(cfg Config) *Sink {
	s := &Sink{cfg: cfg, inj: fault.New(1), attached: make(chan struct{}), stop: make(chan struct{}), stream: cfg.Stream}
	s.phase = time.Now()
	return s
}

// Start connects and begins consuming, or, without a url, listens for the
// SUT to attach; it returns once Endpoint is valid.
func (s *Sink) Start(ctx context.Context, rec pipebench.Arrivals) error {
	if rec == nil {
		return errors.New("the nats sink needs an Arrivals recorder")
	}
	s.rec = rec
	s.loopWG.Add(1)
	go s.pauseLoop()
	if s.cfg.URL != "" {
		return s.Attach(ctx, s.cfg.URL, "")
	}
	srv, err := natsattach.Listen(s.cfg.Listen, AttachPath, `post {"url": "nats://...", "stream": "NAME"}`, s.Attach)
	if err != nil {
		return err
	}
	s.attachSrv = srv
	return nil
}

// consumerWait is how long Attach tries to create its consumer: within
// the 30 s a system under test waits for the attach endpoint's answer.
const consumerWait = 25 * time.Second

// createConsumer creates (or updates) the consumer cc on stream, asking
// again while JetStream does not answer, for at most wait. A replicated
// stream just created may leave the request unanswered while the cluster
// settles its leaders (seen in CI: 15 s without an answer from a
// three-node cluster on a loaded machine), or have no JetStream answering
// yet; the request is idempotent, so it is sent again every attempt
// (5 s, a quarter of a second apart after no responders). Other errors are
// returned at once.
func createConsumer(ctx context.Context, j js.JetStream, stream string, cc js.ConsumerConfig, wait time.Duration) (js.Consumer, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, wait, errConsumerWait)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		cons, err := j.CreateOrUpdateConsumer(actx, stream, cc)
		acancel()
		switch {
		case err == nil:
			return cons, nil
		case ctx.Err() != nil:
			return nil, gaveUp(ctx, wait, err)
		case errors.Is(err, nats.ErrNoResponders):
			select {
			case <-ctx.Done():
				return nil, gaveUp(ctx, wait, err)
			case <-time.After(250 * time.Millisecond):
			}
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, nats.ErrTimeout):
			return nil, err
		}
	}
}

// errConsumerWait is the cause of createConsumer's context when its own
// wait ran out (not its caller's).
var errConsumerWait = errors.New("consumer wait over")

// gaveUp says why createConsumer stopped asking: its caller's context
// ended, or JetStream did not answer within wait (err: the last attempt's
// error).
func gaveUp(ctx context.Context, wait time.Duration, err error) error {
	if context.Cause(ctx) == errConsumerWait {
		return fmt.Errorf("JetStream did not create it within %v (is JetStream enabled, and the stream's cluster up?): %w", wait, err)
	}
	return err
}

// Attach connects to url and starts consuming stream (the configured one
// when empty). It is called by Start with a configured url, or when the SUT
// posts to Endpoint; a second call is an error.
func (s *Sink) Attach(ctx context.Context, url, stream string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nc != nil {
		return errors.New("the nats sink is already consuming")
	}
	if stream != "" {
		s.stream = stream
	}
	// A server that stops answering is noticed within a few seconds (a
	// ping a second, two may go unanswered), and another node of a
	// cluster used.
	nc, err := nats.Connect(url, nats.Name("pipebench-sink"), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return fmt.Errorf("the nats sink cannot connect to %s: %w", url, err)
	}
	if s.cfg.Mode == "core" {
		sub, err := nc.Subscribe(s.cfg.Subject, s.handleCore)
		if err == nil {
			err = sub.SetPendingLimits(1<<20, 1<<30)
		}
		if err == nil {
			err = nc.FlushTimeout(5 * time.Second)
		}
		if err != nil {
			nc.Close()
			return fmt.Errorf("subscribe to %s: %w", s.cfg.Subject, err)
		}
		s.nc, s.sub = nc, sub
		close(s.attached)
		return nil
	}
	j, err := js.New(nc)
	if err != nil {
		nc.Close()
		return err
	}
	cc := js.ConsumerConfig{Durable: s.cfg.Durable, AckPolicy: js.AckExplicitPolicy, AckWait: s.cfg.AckWait.D(),
		MaxAckPending: s.cfg.MaxAckPending, DeliverPolicy: js.DeliverAllPolicy, Replicas: s.cfg.Replicas}
	if s.cfg.Subject != "" && s.cfg.Subject != ">" {
		cc.FilterSubject = s.cfg.Subject
	}
	cons, err := createConsumer(ctx, j, s.stream, cc, consumerWait)
	if err != nil {
		nc.Close()
		return fmt.Errorf("create consumer %s on stream %s: %w", s.cfg.Durable, s.stream, err)
	}
	for i := 0; i < s.cfg.Workers; i++ {
		// Pull requests expire every second: after a resume the server
		// serves the next one at once, where a long pull would wait for
		// the client to notice a missed heartbeat (15 s by default).
		c, err := cons.Consume(s.handleJS, js.PullMaxMessages(s.cfg.Batch), js.PullExpiry(time.Second),
			js.ConsumeErrHandler(func(js.ConsumeContext, error) {}))
		if err != nil {
			for _, c := range s.ccs {
				c.Stop()
			}
			nc.Close()
			return fmt.Errorf("consume from %s: %w", s.stream, err)
		}
		s.ccs = append(s.ccs, c)
	}
	s.nc, s.js = nc, j
	close(s.attached)
	return nil
}

// Endpoint is the server's URL when configured, else the loopback address
// the SUT posts its client URL to.
func (s *Sink) Endpoint() string {
	if s.cfg.URL != "" {
		return s.cfg.URL
	}
	if s.attachSrv == nil {
		return ""
	}
	return s.attachSrv.URL(AttachPath)
}

// Attached is closed once the sink consumes.
func (s *Sink) Attached() <-chan struct{} { return s.attached }

// SetFaults implements pipebench.FaultSetter: latency and the rate limits
// slow processing down (a slow subscriber: rate_limit in items,
// request_rate_limit in messages), failed messages are nak'ed for
// redelivery (and counted faulted), and outage windows pause the consumer
// on the server.
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) {
	q := p
	q.RateLimit, q.RequestRateLimit, q.Outages = 0, 0, nil
	s.inj.Set(q, phaseStart)
	s.limMu.Lock()
	s.nextSlot = time.Time{}
	s.limMu.Unlock()
	s.mu.Lock()
	s.policy, s.phase = p, phaseStart
	s.mu.Unlock()
}

// Delivered counts the items processed and acked.
func (s *Sink) Delivered() int64 { return s.delivered.Load() }

// Redelivered counts the items processed that the server had delivered
// before (a lost ack, an expired ack wait, a fault's nak).
func (s *Sink) Redelivered() int64 { return s.redelivered.Load() }

// Faulted counts the items failed by an injected fault.
func (s *Sink) Faulted() int64 { return s.faulted.Load() }

// Pause pauses the durable consumer on the server: nothing more is
// delivered until Resume (messages already pulled are still processed).
func (s *Sink) Pause(ctx context.Context) error { return s.setPaused(ctx, true) }

// Resume resumes a paused consumer.
func (s *Sink) Resume(ctx context.Context) error { return s.setPaused(ctx, false) }

func (s *Sink) setPaused(ctx context.Context, pause bool) error {
	s.mu.Lock()
	j, stream := s.js, s.stream
	s.mu.Unlock()
	if j == nil {
		return errors.New("pause and resume need a jetstream sink that is consuming")
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var err error
	if pause {
		_, err = j.PauseConsumer(cctx, stream, s.cfg.Durable, time.Now().Add(365*24*time.Hour))
	} else {
		_, err = j.ResumeConsumer(cctx, stream, s.cfg.Durable)
	}
	if err == nil {
		s.mu.Lock()
		s.paused = pause
		s.mu.Unlock()
	}
	return err
}

// pauseLoop pauses and resumes the consumer at the edges of the current
// phase's outage windows.
func (s *Sink) pauseLoop() {
	defer s.loopWG.Done()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			p, start, outage, ready := s.policy, s.phase, s.outage, s.js != nil
			s.mu.Unlock()
			if !ready || len(p.Outages) == 0 && !outage {
				continue
			}
			in := false
			el := now.Sub(start)
			for _, w := range p.Outages {
				if el >= w.Start.D() && el < w.Start.D()+w.Duration.D() {
					in = true
				}
			}
			if in != outage && s.setPaused(context.Background(), in) == nil {
				s.mu.Lock()
				s.outage = in
				s.mu.Unlock()
			}
		}
	}
}

// slow applies the processing rate limits to a message of n items (the
// items limit takes n/rate of the processing time, the message limit
// 1/rate: the larger decides when the next message may start) and the
// injected latency, and decides whether the message fails.
func (s *Sink) slow(n int) fault.Decision {
	s.mu.Lock()
	items, msgs := s.policy.RateLimit.PerSecond(), s.policy.RequestRateLimit.PerSecond()
	burst := s.policy.RateLimitBurst.D()
	s.mu.Unlock()
	var gap time.Duration
	if items > 0 {
		gap = time.Duration(float64(n) * float64(time.Second) / items)
	}
	if msgs > 0 {
		gap = max(gap, time.Duration(float64(time.Second)/msgs))
	}
	if gap > 0 {
		if burst <= 0 {
			burst = time.Second // the policy's default bucket
		}
		s.limMu.Lock()
		now := time.Now()
		// The slots missed while a message was processed or a sleep
		// overran are made up, up to the burst: the limit is the rate
		// over time, not a pause after every message.
		if floor := now.Add(-burst); s.nextSlot.Before(floor) {
			s.nextSlot = floor
		}
		wait := s.nextSlot.Sub(now)
		s.nextSlot = s.nextSlot.Add(gap)
		s.limMu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
	}
	d := s.inj.Decide(fault.Request{At: time.Now(), Items: n})
	if d.Delay > 0 {
		time.Sleep(d.Delay)
	}
	return d
}

func (s *Sink) handleJS(m js.Msg) {
	h := m.Headers()
	n := itemCount(h)
	d := s.slow(n)
	if d.Fail {
		s.faulted.Add(int64(n))
		s.rec.Faulted(n)
		_ = m.NakWithDelay(s.cfg.NakDelay.D())
		return
	}
	if md, err := m.Metadata(); err == nil && md.NumDelivered > 1 {
		s.redelivered.Add(int64(n))
	}
	s.record(h, m.Data())
	_ = m.Ack()
}

func (s *Sink) handleCore(m *nats.Msg) {
	n := itemCount(m.Header)
	d := s.slow(n)
	if d.Fail {
		s.faulted.Add(int64(n))
		s.rec.Faulted(n)
		return
	}
	s.record(m.Header, m.Data)
}

func (s *Sink) record(h nats.Header, data []byte) {
	now := time.Now()
	items, unmatched := payload.Tally(header(h), data, func(seq uint64, sent time.Time) {
		s.rec.Arrive(seq, sent, now)
	})
	if unmatched > 0 {
		s.rec.Unmatched(unmatched)
	}
	s.delivered.Add(int64(items))
}

// header returns a case-insensitive lookup in h.
func header(h nats.Header) func(string) string {
	return func(name string) string {
		if v := h.Get(name); v != "" {
			return v
		}
		for k, vs := range h {
			if len(vs) > 0 && strings.EqualFold(k, name) {
				return vs[0]
			}
		}
		return ""
	}
}

func itemCount(h nats.Header) int { return payload.ItemCount(header(h)) }

// Shutdown stops consuming (processing what was already pulled, bounded by
// ctx and a few seconds), closes the connection and the attach listener.
// The runner stops the SUT before the sink, so the server may be gone: then
// it just stops. A second call does nothing.
func (s *Sink) Shutdown(ctx context.Context) error {
	var err error
	s.shutOnce.Do(func() { err = s.shutdown(ctx) })
	return err
}

func (s *Sink) shutdown(ctx context.Context) error {
	close(s.stop)
	s.loopWG.Wait()
	s.mu.Lock()
	ccs, sub, nc := s.ccs, s.sub, s.nc
	s.mu.Unlock()
	up := nc != nil && nc.IsConnected()
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, c := range ccs {
		if up {
			c.Drain()
		} else {
			c.Stop()
		}
	}
	if up {
		for _, c := range ccs {
			select {
			case <-c.Closed():
			case <-wait.Done():
			}
		}
	}
	if sub != nil && up {
		_ = sub.Drain()
	}
	if nc != nil {
		if up {
			_ = nc.FlushWithContext(wait)
		}
		nc.Close()
	}
	return s.attachSrv.Shutdown(ctx)
}
