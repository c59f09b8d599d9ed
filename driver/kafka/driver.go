// Package kafkadriver produces batches to a Kafka topic with franz-go: one
// record per item (or per batch), each carrying pipebench's sequence number
// and send time in record headers, over one or many producers held open
// for the run. Keys (none, round robin over the partitions, a JSON field),
// acks 0/1/all, idempotence, compression, linger and batch size are the
// producer's own settings; SASL (PLAIN, SCRAM) and TLS as Kafka users
// configure them.
//
// A send is handed to the producer without waiting (the open-model runner
// starts due sends back to back) and its outcome is known when every record
// of it was acknowledged or failed:
//
//   - ok: acknowledged by the brokers (with acks 0, written to the socket);
//   - refused (backpressure): NOT_ENOUGH_REPLICAS (too few in-sync
//     replicas for acks all), a producer whose buffer of unacknowledged
//     records is full (the brokers do not keep up, or throttle the client
//     for a quota: "throttled"), a broker that refused the connection
//     (unreached);
//   - timeout: not acknowledged within the delivery timeout;
//   - error: the broker's error (MESSAGE_TOO_LARGE, an unknown topic, an
//     authorization failure) with its message.
package kafkadriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/format/jsonsplit"
	"github.com/pipebench/pipebench/payload"
)

// Factory returns the factory of the "kafka" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("kafka",
		"Kafka produce (franz-go): keys, acks 0/1/all, idempotence, compression, linger, batch size, SASL and TLS; sequence and send time in record headers",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			return New(*c, env.Target)
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes, pipebench.PayloadLogLines})
}

// Driver produces to Kafka. Send and SendAsync are safe for concurrent use.
type Driver struct {
	cfg       Config
	bootstrap string
	clients   []*producer
	next      atomic.Uint64
	pool      sync.Pool // *send
	overdue   *overdue
	extra     []kgo.RecordHeader
	keyField  []byte // `"field":`
}

// producer is one franz-go client with its connection count.
type producer struct {
	cl    *kgo.Client
	hooks *hooks
	topic string // the topic it produces to, for its outcomes' details
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.AsyncSender        = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// New builds a driver for cfg; target (the embedded SUT's bootstrap list)
// is used when cfg.Bootstrap is empty.
func New(cfg Config, target string) (*Driver, error) {
	if cfg.Bootstrap == "" {
		if strings.Contains(target, "://") {
			return nil, pipebench.UsageError("the kafka driver has no brokers to produce to (the target "+target+" is not a bootstrap list)",
				"add sut: {type: kafka}, or set target.bootstrap to HOST:9092", nil)
		}
		cfg.Bootstrap = target
	}
	if cfg.Bootstrap == "" {
		return nil, pipebench.UsageError("the kafka driver has no bootstrap brokers", "set target.bootstrap (HOST:9092, several comma-separated), or add sut: {type: kafka}", nil)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, bootstrap: strings.Join(kafkaclient.SplitAddrs(cfg.Bootstrap), ",")}
	for k, v := range cfg.Headers {
		d.extra = append(d.extra, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	if cfg.Keys == KeysField {
		d.keyField = []byte(strconv.Quote(cfg.KeyField) + ":")
	}
	d.pool.New = func() any { return newSend(d) }
	d.overdue = newOverdue(cfg.Timeout.D())
	return d, nil
}

// opts are the franz-go options of one producer.
func (d *Driver) opts(h *hooks) ([]kgo.Opt, error) {
	opts, err := kafkaclient.Opts(d.bootstrap, d.cfg.ClientID, d.cfg.SASL, d.cfg.TLS)
	if err != nil {
		return nil, err
	}
	c, _ := codec(d.cfg.Compression)
	opts = append(opts,
		kgo.DefaultProduceTopic(d.cfg.Topic),
		kgo.ProducerBatchCompression(c),
		kgo.ProducerLinger(d.cfg.Linger.D()),
		kgo.ProducerBatchMaxBytes(int32(d.cfg.BatchSize)),
		kgo.MaxBufferedRecords(d.cfg.MaxBuffered),
		kgo.RecordDeliveryTimeout(d.cfg.Timeout.D()),
		kgo.ProduceRequestTimeout(min(d.cfg.Timeout.D(), 30*time.Second)),
		kgo.DialTimeout(min(d.cfg.Timeout.D(), 5*time.Second)),
		kgo.WithHooks(h),
		kgo.RetryBackoffFn(retryBackoff),
	)
	if d.cfg.Retries >= 0 {
		opts = append(opts, kgo.RecordRetries(d.cfg.Retries))
	}
	switch d.cfg.Acks {
	case "0":
		opts = append(opts, kgo.RequiredAcks(kgo.NoAck()))
	case "1":
		opts = append(opts, kgo.RequiredAcks(kgo.LeaderAck()))
	default:
		opts = append(opts, kgo.RequiredAcks(kgo.AllISRAcks()))
	}
	if !d.cfg.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if d.cfg.Keys == KeysRoundRobin {
		opts = append(opts, kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	} else {
		opts = append(opts, kgo.RecordPartitioner(uniformBytes{}))
	}
	return opts, nil
}

// Start opens every producer and asks the brokers for the topic's
// metadata once. Brokers that refuse connections fail it as unreached;
// credentials the brokers refuse are a usage error.
func (d *Driver) Start(ctx context.Context) error {
	if err := fdlimit.Ensure(d.cfg.Connections*len(kafkaclient.SplitAddrs(d.bootstrap)) + fdlimit.Margin); err != nil {
		return pipebench.UsageError(fmt.Sprintf("kafka driver: connections: %d", d.cfg.Connections), "", err)
	}
	for i := 0; i < d.cfg.Connections; i++ {
		h := &hooks{}
		opts, err := d.opts(h)
		if err != nil {
			return pipebench.UsageError("kafka driver", "", err)
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			d.Shutdown(context.Background())
			return pipebench.UsageError("kafka driver", "", err)
		}
		d.clients = append(d.clients, &producer{cl: cl, hooks: h, topic: d.cfg.Topic})
	}
	// One round trip per producer opens its connections before the first
	// send, as a held connection would be.
	errs := make([]error, len(d.clients))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for i, p := range d.clients {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = d.warm(ctx, p.cl)
		}()
	}
	wg.Wait()
	failed := 0
	for _, err := range errs {
		// Refused connections and refused credentials fail the start; a
		// broker that accepts and does not answer in time does not (its
		// sends will time out, which measures it).
		if err != nil && (isAuth(err) || errors.Is(err, syscall.ECONNREFUSED)) {
			d.Shutdown(context.Background())
			return d.startErr(err)
		}
		if err != nil {
			failed++
		}
	}
	if failed == len(errs) {
		err := errs[0]
		if !d.takesConnections(ctx) {
			// No producer got through and no broker takes a connection
			// at all (a full accept queue, a filtered port): unreached,
			// not a slow broker.
			d.Shutdown(context.Background())
			return pipebench.Unreached(fmt.Errorf("kafka driver: no broker at %s took a connection (%w); check bootstrap and that the brokers are running", d.bootstrap, err))
		}
		if notKafka(err) || d.notKafkaAnswers(ctx) {
			// The port takes connections and answers, but not as a
			// Kafka broker does (an HTTP server, a closed connection):
			// nothing sent there would reach a broker.
			d.Shutdown(context.Background())
			return netclass.StartError(fmt.Sprintf("kafka driver: %s answers, but not as a Kafka broker", d.bootstrap),
				fmt.Errorf("%w (%s)", netclass.ErrProtocolMismatch, err), "check bootstrap: the brokers' host:port (9092 by default)")
		}
	}
	if err := d.checkTopic(ctx); err != nil {
		d.Shutdown(context.Background())
		return err
	}
	d.overdue.start()
	return nil
}

// notKafka tells whether a producer's failure to start says the peer is
// not a Kafka broker: its answer could not be read as Kafka's (a size no
// broker sends, an HTTP or TLS answer), or it closed the connection at the
// first request. A timeout does not: a broker that is slow to answer is
// measured by its sends' timeouts.
func notKafka(err error) bool {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout(), isAuth(err):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	msg := err.Error()
	for _, s := range []string{"invalid large response size", "unable to read", "invalid response", "not a valid", "correlation ID", "tls alert"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// checkTopic asks the brokers once whether the topic exists: one that does
// not (the brokers do not create topics for franz-go's producers) fails
// the start, naming it, rather than every send after its retries. A
// broker that does not answer in time leaves it to the sends.
func (d *Driver) checkTopic(ctx context.Context) error {
	if len(d.clients) == 0 {
		return nil
	}
	mctx, cancel := context.WithTimeout(ctx, min(d.cfg.Timeout.D(), 10*time.Second))
	defer cancel()
	if err := kafkaclient.CheckTopic(mctx, d.clients[0].cl, d.cfg.Topic); err != nil {
		return pipebench.UsageError(fmt.Sprintf("kafka driver: the brokers at %s: %v", d.bootstrap, err),
			"create the topic, or set target.topic to one the brokers have (with the embedded kafka system under test: one of sut.topics)", nil)
	}
	return nil
}

// warm makes cl ready to produce before the first send, as a producer held
// open for the run is: it asks for the topic's metadata (a connection to a
// broker), the producer ID of an idempotent producer, and opens the
// produce connection to every broker with an empty produce request (acks
// 1 or all; with acks 0 the broker answers none, and the first send opens
// it). Otherwise the first send of each producer would wait for all three,
// which with many producers is the first seconds of the run. The
// producer then holds three connections: to the bootstrap broker, to the
// broker as its metadata names it, and the produce connection; franz-go
// closes the first two once idle for 20 s (its ConnIdleTimeout).
func (d *Driver) warm(ctx context.Context, cl *kgo.Client) error {
	wctx, cancel := context.WithTimeout(ctx, min(d.cfg.Timeout.D(), 10*time.Second))
	defer cancel()
	cl.ForceMetadataRefresh()
	if err := cl.Ping(wctx); err != nil {
		return err
	}
	if d.cfg.Idempotent {
		if _, _, err := cl.ProducerID(wctx); err != nil {
			return err
		}
	}
	if d.cfg.Acks == "0" {
		return nil
	}
	for _, b := range cl.DiscoveredBrokers() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 5000
		if _, err := b.Request(wctx, req); err != nil {
			return err
		}
	}
	return nil
}

// takesConnections reports whether a bootstrap broker accepts a TCP
// connection (whatever it then answers).
func (d *Driver) takesConnections(ctx context.Context) bool {
	for _, addr := range kafkaclient.SplitAddrs(d.bootstrap) {
		if c, err := netclass.Dial(ctx, addr, nil, 2*time.Second); err == nil {
			c.Close()
			return true
		}
	}
	return false
}

func (d *Driver) startErr(err error) error {
	boot := d.bootstrap
	switch {
	case isAuth(err):
		return pipebench.UsageError(fmt.Sprintf("the Kafka brokers at %s refused the credentials", boot),
			"check sasl.mechanism, sasl.user and sasl.password (e.g. password: ${KAFKA_PASSWORD})", err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return pipebench.Unreached(fmt.Errorf("no Kafka broker at %s: connection refused: %w", boot, err))
	}
	return fmt.Errorf("connect to the Kafka brokers at %s: %w", boot, err)
}

func isAuth(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.IllegalSaslState) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.ClusterAuthorizationFailed)
}

// OpenConnections implements pipebench.ConnectionReporter: the producers
// that hold at least one open connection to a broker.
func (d *Driver) OpenConnections() int {
	n := 0
	for _, p := range d.clients {
		if p.hooks.open.Load() > 0 {
			n++
		}
	}
	return n
}

// Shutdown waits for the records in flight (bounded by ctx and the
// delivery timeout) and closes every producer.
func (d *Driver) Shutdown(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(ctx, min(d.cfg.Timeout.D(), 10*time.Second))
	defer cancel()
	var wg sync.WaitGroup
	for _, p := range d.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.cl.Flush(fctx)
			p.cl.Close()
		}()
	}
	wg.Wait()
	d.overdue.close()
	return nil
}

// Send implements pipebench.Driver.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	ch := make(chan pipebench.Outcome, 1)
	d.SendAsync(ctx, b, func(_ time.Time, o pipebench.Outcome) { ch <- o })
	select {
	case o := <-ch:
		return o
	case <-ctx.Done():
		// The records stay with the producer until their promises run;
		// the outcome no one waits for is dropped.
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()}
	}
}

// SendAsync implements pipebench.AsyncSender: the batch's records are
// handed to the next producer without waiting for room, and done is
// called once when every one of them is acknowledged or failed.
func (d *Driver) SendAsync(ctx context.Context, b *pipebench.Batch, done func(started time.Time, o pipebench.Outcome)) {
	started := time.Now()
	if ctx.Err() != nil {
		done(started, pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()})
		return
	}
	if len(d.clients) == 0 {
		done(started, pipebench.Outcome{Class: pipebench.ClassError, Detail: "not started", Message: "the kafka driver was not started"})
		return
	}
	p := d.clients[(d.next.Add(1)-1)%uint64(len(d.clients))]
	s := d.pool.Get().(*send)
	s.fill(b)
	s.started, s.done, s.p = started, done, p
	d.overdue.add(s)
	n := len(s.recs)
	s.left.Store(int32(n) + 1)
	for i := range s.recs {
		p.cl.TryProduce(ctx, &s.recs[i], s.promise)
	}
	s.release()
}

// send is one batch's records in flight, reused through the driver's pool.
type send struct {
	d     *Driver
	p     *producer
	recs  []kgo.Record
	hdrs  []kgo.RecordHeader
	arena arena
	keep  []kept // the batch's headers every record carries
	seqs  []span // each record's sequence number in arena
	items [][]byte
	left  atomic.Int32
	// Linked in the driver's overdue list while in flight (under its
	// lock): reported once its outcome was given, by the last record's
	// promise or by the overdue sweep.
	prev, next       *send
	linked, reported bool
	deadline         time.Time
	mu               sync.Mutex
	worst            pipebench.Outcome
	started          time.Time
	done             func(time.Time, pipebench.Outcome)
	promise          func(*kgo.Record, error)
}

func newSend(d *Driver) *send {
	s := &send{d: d}
	s.promise = func(_ *kgo.Record, err error) {
		if err != nil {
			s.fail(s.p.classify(err))
		}
		s.release()
	}
	return s
}

func (s *send) fail(o pipebench.Outcome) {
	s.mu.Lock()
	if s.worst.Class == pipebench.ClassOK {
		s.worst = o
	}
	s.mu.Unlock()
}

// release counts one record settled (or the hand-over done); the last
// calls done, unless the overdue sweep ended the send already, and
// returns the send to the pool.
func (s *send) release() {
	if s.left.Add(-1) != 0 {
		return
	}
	o, done, started := s.worst, s.done, s.started
	report := s.d.overdue.settle(s)
	s.reset()
	s.d.pool.Put(s)
	if report {
		done(started, o)
	}
}

func (s *send) reset() {
	clear(s.recs)
	s.recs = s.recs[:0]
	clear(s.hdrs)
	s.hdrs = s.hdrs[:0]
	s.arena, s.keep, s.seqs = s.arena[:0], s.keep[:0], s.seqs[:0]
	clear(s.items)
	s.items = s.items[:0]
	s.worst = pipebench.Outcome{}
	s.done, s.p = nil, nil
}

// fill builds the records of b: one per item when it splits (a JSON array
// body of exactly Count events, Split on), else the batch as one. Each
// carries the sequence headers (its own sequence number), the generator's
// other headers (not a count of 1 nor the content type) and the
// configured ones. Values are slices of b.Body: the batch outlives its
// records. Header values are copied into one arena reused from send to
// send (a batch's shared values once), and sliced once it stops growing.
func (s *send) fill(b *pipebench.Batch) {
	d := s.d
	var items [][]byte
	if d.cfg.Split && b.Count > 1 {
		// The events as the generator recorded them, else as a scan of
		// the body finds them.
		if items = payload.Items(b, s.items[:0]); items == nil {
			items = jsonsplit.Array(b.Body, b.Count, s.items[:0])
		}
		if items != nil {
			s.items = items
		}
	}
	n := 1
	if items != nil {
		n = len(items)
	}
	s.arena, s.keep, s.seqs = s.arena[:0], s.keep[:0], s.seqs[:0]
	hasSeq := false
	for j, h := range b.Headers {
		switch {
		case payload.LeftOut(b.Headers, j, items != nil):
		case h.Name == payload.HeaderSeq:
			hasSeq = true
		default:
			from := len(s.arena)
			s.arena = append(s.arena, h.Value...)
			s.keep = append(s.keep, kept{name: h.Name, span: span{from, len(s.arena)}})
		}
	}
	if hasSeq {
		for i := 0; i < n; i++ {
			from := len(s.arena)
			s.arena = strconv.AppendUint(s.arena, b.Seq+uint64(i), 10)
			s.seqs = append(s.seqs, span{from, len(s.arena)})
		}
	}
	if cap(s.recs) < n {
		s.recs = make([]kgo.Record, n)
	}
	s.recs = s.recs[:n]
	perRec := len(s.keep) + len(d.extra) + 1
	if cap(s.hdrs) < n*perRec {
		s.hdrs = make([]kgo.RecordHeader, 0, n*perRec)
	}
	hdrs := s.hdrs[:0]
	for i := 0; i < n; i++ {
		r := &s.recs[i]
		r.Topic = d.cfg.Topic
		if items != nil {
			r.Value = items[i]
		} else {
			r.Value = b.Body
		}
		if d.keyField != nil {
			r.Key = fieldValue(r.Value, d.keyField)
		}
		start := len(hdrs)
		if hasSeq {
			hdrs = append(hdrs, kgo.RecordHeader{Key: payload.HeaderSeq, Value: s.arena.slice(s.seqs[i])})
		}
		for _, k := range s.keep {
			hdrs = append(hdrs, kgo.RecordHeader{Key: k.name, Value: s.arena.slice(k.span)})
		}
		hdrs = append(hdrs, d.extra...)
		r.Headers = hdrs[start:len(hdrs):len(hdrs)]
	}
	s.hdrs = hdrs
}

// arena holds header values; span is one of them.
type (
	arena []byte
	span  struct{ from, to int }
	kept  struct {
		name string
		span span
	}
)

// slice is the value at sp, capped so that no append can reach the next.
func (a arena) slice(sp span) []byte { return a[sp.from:sp.to:sp.to] }

// fieldValue returns the value of the JSON field whose `"name":` prefix is
// key in the object obj: a string's contents, or a number or literal as
// written; nil when it is absent (the record is then unkeyed).
func fieldValue(obj, key []byte) []byte {
	i := bytes.Index(obj, key)
	if i < 0 {
		return nil
	}
	v := bytes.TrimLeft(obj[i+len(key):], " \t")
	if len(v) == 0 {
		return nil
	}
	if v[0] == '"' {
		end := jsonsplit.StringEnd(v, 1)
		if end < 0 {
			return nil
		}
		return v[1:end]
	}
	end := bytes.IndexAny(v, ",}] \t\r\n")
	if end < 0 {
		end = len(v)
	}
	return v[:end]
}

// hooks counts a producer's open connections and remembers when a broker
// last throttled it.
type hooks struct {
	open      atomic.Int64
	throttled atomic.Int64 // unix nanoseconds until which the broker throttles
}

var (
	_ kgo.HookBrokerConnect    = (*hooks)(nil)
	_ kgo.HookBrokerDisconnect = (*hooks)(nil)
	_ kgo.HookBrokerThrottle   = (*hooks)(nil)
)

// OnBrokerConnect implements kgo.HookBrokerConnect.
func (h *hooks) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		h.open.Add(1)
	}
}

// OnBrokerDisconnect implements kgo.HookBrokerDisconnect.
func (h *hooks) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.open.Add(-1) }

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (h *hooks) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	until := time.Now().Add(d).UnixNano()
	if until > h.throttled.Load() {
		h.throttled.Store(until)
	}
}

// classify turns a record's produce error into an outcome.
func (p *producer) classify(err error) pipebench.Outcome {
	msg := err.Error()
	var ke *kerr.Error
	switch {
	case errors.Is(err, kgo.ErrMaxBuffered):
		// The record never left the client: the brokers held it back.
		if time.Now().UnixNano() < p.hooks.throttled.Load()+int64(time.Second) {
			return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "throttled", Unsent: pipebench.OwnerSystem,
				Message: "the producer's buffer is full while the broker throttles it for a quota: " + msg}
		}
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "buffer full", Unsent: pipebench.OwnerSystem,
			Message: "the producer's buffer of unacknowledged records is full (the brokers do not keep up): " + msg}
	case errors.Is(err, kerr.NotEnoughReplicas), errors.Is(err, kerr.NotEnoughReplicasAfterAppend):
		errors.As(err, &ke)
		return pipebench.Outcome{Class: pipebench.ClassRefused, Code: int(ke.Code), Detail: ke.Message, Message: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "connection refused", Message: msg, Unreached: true, Unsent: pipebench.OwnerSystem}
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kerr.RequestTimedOut), errors.Is(err, context.DeadlineExceeded):
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "delivery timeout", Message: msg}
	case errors.Is(err, context.Canceled):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: msg}
	case errors.Is(err, kgo.ErrClientClosed):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "producer closed", Message: msg}
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		// The topic went away during the run (or never was): named, so
		// that the summary says which.
		errors.As(err, &ke)
		return pipebench.Outcome{Class: pipebench.ClassError, Code: int(ke.Code), Detail: "no topic " + strconv.Quote(p.topic), Message: msg}
	case errors.As(err, &ke):
		return pipebench.Outcome{Class: pipebench.ClassError, Code: int(ke.Code), Detail: ke.Message, Message: msg}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "disconnected", Message: msg}
	}
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "produce error", Message: msg}
}
