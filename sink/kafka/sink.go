// Package kafkasink is the Kafka test backend: a consumer group member
// (franz-go) reading the topic the pipeline writes to. It matches the
// sequence number and send time every record carries (payload.Extract's
// convention, in record headers or in the JSON value) for delivered, lost,
// duplicates and end-to-end latency, and judges order per partition and
// producer (Kafka keeps order only there), so records of different
// partitions interleaving are not counted as reordered.
//
// The phase's faults make it a slow or paused consumer: added latency and
// a processing rate limit slow it down; an injected failure retries the
// record in place after nak_delay (counted faulted); outage windows pause
// its fetching, so the group's lag on the brokers grows and drains after.
// Offsets are committed for records processed, every commit_interval.
//
// Without a bootstrap it waits to be told where to consume: its Endpoint
// is a loopback HTTP address to which the embedded kafka SUT posts its
// bootstrap list and topic once the topic exists.
package kafkasink

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpserve"
	"github.com/pipebench/pipebench/internal/conn/kafkaattach"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/sink/fault"
)

// Config configures the Kafka sink.
type Config struct {
	// Bootstrap is the brokers' host:port, comma-separated; empty waits
	// for the embedded kafka SUT to attach.
	Bootstrap string `yaml:"bootstrap" json:"bootstrap,omitempty"`
	// Topic to consume (the SUT's first topic when it attaches and this
	// is empty).
	Topic string `yaml:"topic" json:"topic,omitempty"`
	// Group is the consumer group.
	Group string `yaml:"group" json:"group"`
	// Start is where a group without committed offsets starts: earliest
	// or latest.
	Start string `yaml:"start" json:"start"`
	// CommitInterval is how often the offsets of processed records are
	// committed (the group's lag is measured against them).
	CommitInterval pipebench.Duration `yaml:"commit_interval" json:"commit_interval"`
	// FetchMaxWait is how long the broker holds a fetch for data.
	FetchMaxWait pipebench.Duration `yaml:"fetch_max_wait" json:"fetch_max_wait"`
	// NakDelay is the wait before a record failed by a fault is processed
	// again.
	NakDelay pipebench.Duration `yaml:"nak_delay" json:"nak_delay"`
	// ClientID names the consumer to the brokers.
	ClientID string `yaml:"client_id" json:"client_id"`
	// Listen is where a sink without a bootstrap waits for the SUT.
	Listen string `yaml:"listen" json:"listen"`
	// SASL is the authentication, as for the kafka driver.
	SASL kafkaclient.SASL `yaml:"sasl" json:"sasl"`
	// TLS is the client TLS, as for the kafka driver.
	TLS kafkaclient.TLS `yaml:"tls" json:"tls"`
}

// DefaultConfig returns the defaults: group pipebench from the earliest
// offset, commits every second.
func DefaultConfig() *Config {
	return &Config{Group: "pipebench", Start: "earliest", CommitInterval: pipebench.Duration(time.Second),
		FetchMaxWait: pipebench.Duration(100 * time.Millisecond), NakDelay: pipebench.Duration(100 * time.Millisecond),
		ClientID: "pipebench-sink", Listen: "127.0.0.1:0"}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	errs := kafkaclient.ValidateBootstrap(c.Bootstrap)
	if c.Topic != "" && !kafkaclient.ValidTopic(c.Topic) {
		errs = append(errs, fmt.Errorf("topic: %q is not a topic name", c.Topic))
	}
	if c.Bootstrap != "" && c.Topic == "" {
		errs = append(errs, fmt.Errorf("topic: a sink with a bootstrap needs the topic to consume"))
	}
	if c.Group == "" {
		errs = append(errs, fmt.Errorf("group: must not be empty"))
	}
	if c.Start != "earliest" && c.Start != "latest" {
		errs = append(errs, fmt.Errorf("start: %q is not earliest or latest", c.Start))
	}
	if c.CommitInterval < pipebench.Duration(10*time.Millisecond) {
		errs = append(errs, fmt.Errorf("commit_interval: must be at least 10ms"))
	}
	if c.FetchMaxWait < pipebench.Duration(time.Millisecond) {
		errs = append(errs, fmt.Errorf("fetch_max_wait: must be at least 1ms"))
	}
	if c.NakDelay < 0 {
		errs = append(errs, fmt.Errorf("nak_delay: must be 0 or more"))
	}
	if c.ClientID == "" {
		errs = append(errs, fmt.Errorf("client_id: must not be empty"))
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen: %q is not host:port", c.Listen))
	}
	errs = append(errs, c.SASL.Validate()...)
	errs = append(errs, c.TLS.Validate()...)
	return errors.Join(errs...)
}

// Factory returns the factory of the "kafka" sink.
func Factory() pipebench.Factory[pipebench.Sink] {
	return pipebench.NewFactory("kafka",
		"Kafka backend: a consumer group member matching sequence numbers (order judged per partition), a slow or paused consumer under faults",
		DefaultConfig,
		func(c *Config, _ pipebench.Env) (pipebench.Sink, error) { return New(*c), nil })
}

// Sink consumes from Kafka. Start once, Shutdown once.
type Sink struct {
	cfg Config
	inj *fault.Injector
	rec pipebench.Arrivals
	ord pipebench.OrderedArrivals // rec, when it takes the sink's order
	// attachSrv serves kafkaattach.Path when the sink waits to be told
	// where to consume.
	attachSrv *httpserve.Server

	mu       sync.Mutex
	cl       *kgo.Client
	topic    string
	attached chan struct{}
	policy   pipebench.FaultPolicy
	paused   bool          // fetching is paused (by Pause or an outage)
	outages  int           // outage windows on now
	timers   []*time.Timer // at the edges of the phase's outage windows
	gen      int           // counts SetFaults: a timer of an earlier phase does nothing
	cancel   context.CancelFunc
	loopWG   sync.WaitGroup
	shutOnce sync.Once

	nextSlot time.Time // of the rate limit; the poll loop's own
	last     map[orderKey]uint64

	delivered atomic.Int64
	faulted   atomic.Int64
	reordered atomic.Int64
	// settled is set by Settle: the run took its last reading, and the
	// sink processes nothing more, so what it has not delivered stays the
	// group's lag on the brokers.
	settled atomic.Bool
}

// orderKey is where Kafka keeps order: a partition, per producer (an
// idempotent producer's id; -1 for others).
type orderKey struct {
	partition int32
	producer  int64
}

var (
	_ pipebench.Sink        = (*Sink)(nil)
	_ pipebench.FaultSetter = (*Sink)(nil)
)

// New returns a sink that is not started.
func New(cfg Config) *Sink {
	return &Sink{cfg: cfg, inj: fault.New(1), attached: make(chan struct{}),
		topic: cfg.Topic, last: map[orderKey]uint64{}}
}

// Start begins consuming, or, without a bootstrap, listens for the SUT to
// attach; it returns once Endpoint is valid.
func (s *Sink) Start(ctx context.Context, rec pipebench.Arrivals) error {
	if rec == nil {
		return errors.New("the kafka sink needs an Arrivals recorder")
	}
	s.rec = rec
	s.ord, _ = rec.(pipebench.OrderedArrivals)
	if s.cfg.Bootstrap != "" {
		return s.Attach(ctx, s.cfg.Bootstrap, "")
	}
	srv, err := kafkaattach.Listen(s.cfg.Listen, s.Attach)
	if err != nil {
		return err
	}
	s.attachSrv = srv
	return nil
}

// Attach joins the group on the brokers at bootstrap and starts consuming
// topic (the configured one wins; topic is used when none is). It returns
// once the group has assigned the sink its partitions (at most 25 s:
// within the 30 s the system under test waits for the attach), so that
// the load the runner starts next is read from its first record rather
// than after the group's join. A topic the brokers do not have is an
// error naming it, at once. It is called by Start with a
// configured bootstrap, or when the SUT posts to Endpoint; a second call
// is an error.
func (s *Sink) Attach(ctx context.Context, bootstrap, topic string) error {
	assigned, err := s.attach(ctx, bootstrap, topic)
	if err != nil {
		return err
	}
	t := time.NewTimer(25 * time.Second)
	defer t.Stop()
	select {
	case <-assigned:
	case <-t.C:
	case <-ctx.Done():
	}
	close(s.attached)
	return nil
}

func (s *Sink) attach(ctx context.Context, bootstrap, topic string) (<-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cl != nil {
		return nil, errors.New("the kafka sink is already consuming")
	}
	if s.topic == "" {
		s.topic = topic
	}
	if s.topic == "" {
		return nil, errors.New("the kafka sink has no topic: set sink.topic")
	}
	opts, err := kafkaclient.Opts(bootstrap, s.cfg.ClientID, s.cfg.SASL, s.cfg.TLS)
	if err != nil {
		return nil, err
	}
	reset := kgo.NewOffset().AtStart()
	if s.cfg.Start == "latest" {
		reset = kgo.NewOffset().AtEnd()
	}
	assigned := make(chan struct{})
	var once sync.Once
	opts = append(opts,
		kgo.ConsumerGroup(s.cfg.Group),
		kgo.ConsumeTopics(s.topic),
		kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(s.cfg.FetchMaxWait.D()),
		kgo.AutoCommitMarks(),
		kgo.AutoCommitInterval(s.cfg.CommitInterval.D()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) { once.Do(func() { close(assigned) }) }),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("the kafka sink: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	err = cl.Ping(pctx)
	cancel()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("the kafka sink cannot reach the brokers at %s: %w", bootstrap, err)
	}
	// A topic the brokers do not have would leave the group without
	// partitions until the attach's deadline: named now instead.
	tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
	err = kafkaclient.CheckTopic(tctx, cl, s.topic)
	tcancel()
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("the kafka sink: the brokers at %s: %w: create it, or set sink.topic to one they have", bootstrap, err)
	}
	if s.paused {
		cl.PauseFetchTopics(s.topic)
	}
	lctx, lcancel := context.WithCancel(context.Background())
	s.cl, s.cancel = cl, lcancel
	s.loopWG.Add(1)
	go s.poll(lctx)
	return assigned, nil
}

// Endpoint is the bootstrap list when configured, else the loopback
// address the SUT posts its bootstrap list to.
func (s *Sink) Endpoint() string {
	if s.cfg.Bootstrap != "" {
		return s.cfg.Bootstrap
	}
	if s.attachSrv == nil {
		return ""
	}
	return s.attachSrv.URL(kafkaattach.Path)
}

// Attached is closed once the sink consumes.
func (s *Sink) Attached() <-chan struct{} { return s.attached }

// SetFaults implements pipebench.FaultSetter: latency and the rate limit
// slow processing down, failed records are processed again after
// nak_delay (and counted faulted), and outage windows pause fetching: a
// timer at each edge of each window (a paused consumer is resumed when the
// next phase begins).
func (s *Sink) SetFaults(p pipebench.FaultPolicy, phaseStart time.Time) {
	q := p
	q.RateLimit, q.Outages = 0, nil
	s.inj.Set(q, phaseStart)
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.timers = s.timers[:0]
	s.gen++
	gen, wasOn := s.gen, s.outages > 0
	s.outages = 0
	s.policy = p
	now := time.Now()
	for _, w := range p.Outages {
		from := phaseStart.Add(w.Start.D())
		to := from.Add(w.Duration.D())
		s.timers = append(s.timers,
			time.AfterFunc(max(from.Sub(now), 0), func() { s.outageEdge(gen, 1) }),
			time.AfterFunc(max(to.Sub(now), 0), func() { s.outageEdge(gen, -1) }))
	}
	s.mu.Unlock()
	if wasOn {
		s.setPaused(false)
	}
}

// Delivered counts the items processed.
func (s *Sink) Delivered() int64 { return s.delivered.Load() }

// Faulted counts the items failed by an injected fault.
func (s *Sink) Faulted() int64 { return s.faulted.Load() }

// Reordered counts the items that came after a later one of the same
// partition and producer, a duplicate of an earlier item included (the
// reordered KPI counts each item once and a duplicate as a duplicate).
func (s *Sink) Reordered() int64 { return s.reordered.Load() }

// Pause stops fetching: nothing more is consumed until Resume (records
// already fetched are still processed), so the group's lag grows.
func (s *Sink) Pause() error { return s.setPaused(true) }

// Resume fetches again after Pause.
func (s *Sink) Resume() error { return s.setPaused(false) }

func (s *Sink) setPaused(pause bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cl == nil {
		s.paused = pause // applied once the sink attaches
		return errors.New("pause and resume need a kafka sink that is consuming")
	}
	if pause {
		s.cl.PauseFetchTopics(s.topic)
	} else {
		s.cl.ResumeFetchTopics(s.topic)
	}
	s.paused = pause
	return nil
}

// outageEdge is a timer's call at an edge of an outage window: entering
// one (+1) or leaving it (-1). Fetching is paused while any window is on.
func (s *Sink) outageEdge(gen int, delta int) {
	s.mu.Lock()
	if gen != s.gen {
		s.mu.Unlock()
		return // a timer of an earlier phase's
	}
	s.outages += delta
	on := s.outages > 0
	s.mu.Unlock()
	s.setPaused(on)
}

// poll consumes until ctx ends, one record at a time in fetch order.
func (s *Sink) poll(ctx context.Context) {
	defer s.loopWG.Done()
	for ctx.Err() == nil {
		fs := s.cl.PollRecords(ctx, 10000)
		if ctx.Err() != nil {
			s.cl.AllowRebalance()
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			if ctx.Err() == nil {
				s.process(ctx, r)
			}
		})
		s.cl.AllowRebalance()
	}
}

// process handles one record: the processing faults, then the arrival.
func (s *Sink) process(ctx context.Context, r *kgo.Record) {
	n := itemCount(r)
	for {
		if s.settled.Load() {
			return // after the last reading: left in the log, unmarked
		}
		s.limit(ctx, n)
		d := s.inj.Decide(fault.Request{At: time.Now(), Items: n})
		d.Wait(ctx)
		if !d.Fail {
			break
		}
		s.faulted.Add(int64(n))
		s.rec.Faulted(n)
		if !fault.Sleep(ctx, s.cfg.NakDelay.D()) {
			return
		}
	}
	s.record(r)
	s.cl.MarkCommitRecords(r)
}

// limit waits for the record's slot under the phase's rate limit, which
// counts items: a record of n items takes n slots.
func (s *Sink) limit(ctx context.Context, n int) {
	s.mu.Lock()
	rate := s.policy.RateLimit.PerSecond()
	s.mu.Unlock()
	if rate <= 0 {
		s.nextSlot = time.Time{}
		return
	}
	// Slots missed by less than slack are still owed: a sleep lasts
	// about a millisecond at the least, and at thousands a second the
	// consumer would otherwise fall short of its limit.
	const slack = 50 * time.Millisecond
	now := time.Now()
	if s.nextSlot.Before(now.Add(-slack)) {
		s.nextSlot = now.Add(-slack)
	}
	wait := s.nextSlot.Sub(now)
	s.nextSlot = s.nextSlot.Add(time.Duration(float64(max(n, 1)) * float64(time.Second) / rate))
	if wait > 0 {
		fault.Sleep(ctx, wait)
	}
}

func (s *Sink) record(r *kgo.Record) {
	now := time.Now()
	h := header(r)
	key := orderKey{partition: r.Partition, producer: r.ProducerID}
	items, unmatched := payload.Tally(h, r.Value, func(seq uint64, sent time.Time) {
		last, seen := s.last[key]
		late := seen && seq < last
		if !late {
			s.last[key] = seq
		}
		if late {
			s.reordered.Add(1)
		}
		if s.ord != nil {
			s.ord.ArriveOrdered(seq, sent, now, late)
		} else {
			s.rec.Arrive(seq, sent, now)
		}
	})
	if unmatched > 0 {
		s.rec.Unmatched(unmatched)
	}
	s.delivered.Add(int64(items))
}

// header returns a case-insensitive lookup in the record's headers.
func header(r *kgo.Record) func(string) string {
	return func(name string) string {
		for _, h := range r.Headers {
			if strings.EqualFold(h.Key, name) {
				return string(h.Value)
			}
		}
		return ""
	}
}

func itemCount(r *kgo.Record) int { return payload.ItemCount(header(r)) }

var _ pipebench.Settler = (*Sink)(nil)

// Settle implements pipebench.Settler: the sink processes no record from
// now on (the run takes its last reading) and the offsets of every record
// processed are committed, so the group's lag on the brokers is what the
// sink has not delivered, and stays so until it shuts down.
func (s *Sink) Settle(ctx context.Context) error {
	s.settled.Store(true)
	s.mu.Lock()
	cl := s.cl
	s.mu.Unlock()
	if cl == nil {
		return nil
	}
	return cl.CommitMarkedOffsets(ctx)
}

// Shutdown stops consuming, commits the offsets of what was processed and
// leaves the group (bounded by ctx and a few seconds), and closes the
// attach listener. The runner stops the SUT before the sink, so the
// brokers may be gone: then it just stops. A second call does nothing.
func (s *Sink) Shutdown(ctx context.Context) error {
	var err error
	s.shutOnce.Do(func() { err = s.shutdown(ctx) })
	return err
}

func (s *Sink) shutdown(ctx context.Context) error {
	s.mu.Lock()
	for _, t := range s.timers {
		t.Stop()
	}
	s.gen++
	cl, cancel := s.cl, s.cancel
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.loopWG.Wait()
	if cl != nil {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		_ = cl.CommitMarkedOffsets(cctx)
		ccancel()
		done := make(chan struct{})
		go func() { cl.Close(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	}
	return s.attachSrv.Shutdown(ctx)
}

var _ pipebench.ResourceUser = (*Config)(nil)

// Uses implements pipebench.ResourceUser: the topic, when the sink
// consumes from the embedded kafka system under test (no bootstrap of its
// own) and names one.
func (c *Config) Uses() []pipebench.Resource {
	if c.Bootstrap != "" || c.Topic == "" {
		return nil
	}
	return []pipebench.Resource{{Kind: kafkaclient.TopicKind, Name: c.Topic, Key: "topic"}}
}
