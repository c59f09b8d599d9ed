package kafkadriver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/drivertest"
	"github.com/pipebench/pipebench/internal/testkit/kafkatest"
	"github.com/pipebench/pipebench/internal/testkit/testutil"
	"github.com/pipebench/pipebench/payload"
)

func TestMain(m *testing.M) { os.Exit(kafkatest.Main(m, 1)) }

func newGen(t testing.TB, fields map[string]string) pipebench.Generator {
	g, err := payload.EventFactory().New(&payload.EventConfig{Size: 128, SeqIn: "header", ContentType: "application/json", Fields: fields}, pipebench.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func newDriver(t testing.TB, cfg Config) *Driver {
	t.Helper()
	d, err := New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	testutil.Start(t, d.Start, d.Shutdown)
	return d
}

func config(bootstrap, topic string) Config {
	cfg := *DefaultConfig()
	cfg.Bootstrap, cfg.Topic, cfg.Linger = bootstrap, topic, pipebench.Duration(time.Millisecond)
	return cfg
}

// alter sets topic's configurations and waits until a probe record shows
// the broker applies them: want is the error a produce of probe gets
// (nil: accepted).
func alter(t *testing.T, b *kafkatest.Broker, topic string, set map[string]string, probe []byte, want error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var alters []kadm.AlterConfig
	for k, v := range set {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(v)})
	}
	resp, err := b.Admin(t).AlterTopicConfigs(ctx, alters, topic)
	if err == nil {
		err = errors.Join(resp[0].Err, errors.New(resp[0].ErrMessage))
	}
	if resp[0].Err != nil {
		t.Fatalf("alter %s: %v", topic, err)
	}
	cl := b.Client(t, kgo.RecordRetries(0), kgo.RecordDeliveryTimeout(2*time.Second), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.AllISRAcks()))
	testutil.Eventually(t, 30*time.Second, func() bool {
		err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: probe}).FirstErr()
		return errors.Is(err, want)
	}, "the broker applies %v to %s", set, topic)
}

// The conformance suite against the real broker: every receiver is a new
// topic of one partition; refused is min.insync.replicas above the
// replicas there are (NOT_ENOUGH_REPLICAS for acks all), error a
// max.message.bytes below the record (MESSAGE_TOO_LARGE), slow the proxy
// in front of the broker holding every byte, gone the proxy closed.
func TestConformance(t *testing.T) {
	b := kafkatest.Get(t)
	px := b.Proxy
	// The suite builds each driver right after starting its receiver: the
	// receiver's topic is the one the next driver produces to.
	topic := "conformance"
	drivertest.Run(t, drivertest.Harness{
		Factory: Factory(),
		Configure: func(cfg any) {
			c := cfg.(*Config)
			c.Topic, c.Timeout = topic, pipebench.Duration(2500*time.Millisecond)
		},
		Invalid: func(cfg any) string {
			cfg.(*Config).Acks = "most"
			return "acks"
		},
		Generator: newGen(t, nil), Count: 1,
		Receiver: func(t *testing.T) drivertest.Receiver {
			px.Set(kafkatest.Pass)
			topic = b.Topic(t, "conf", 1, 1, nil)
			t.Cleanup(func() { px.Set(kafkatest.Pass) })
			return drivertest.Receiver{
				Target:   px.Addr(),
				Slow:     5 * time.Second,
				Received: func() int64 { return b.EndOffsets(t, topic) },
				Close:    px.Close,
				Set: func(a drivertest.Answer) {
					switch a {
					case drivertest.AnswerOK:
						px.Set(kafkatest.Pass)
					case drivertest.AnswerRefused:
						t.Skip("one broker cannot refuse a produce as backpressure (NOT_ENOUGH_REPLICAS needs a replication factor above 1: " +
							"the broker caps min.insync.replicas at it); TestMessageTooLarge checks the error answer here and " +
							"sut/kafka's TestThreeBrokers a real NOT_ENOUGH_REPLICAS from three brokers with one killed")
					case drivertest.AnswerError:
						alter(t, b, topic, map[string]string{"max.message.bytes": "64"}, make([]byte, 200), kerr.MessageTooLarge)
					case drivertest.AnswerSlow:
						px.Set(kafkatest.Hold)
					}
				},
			}
		},
	})
}

// Batches split into one record per item, every record with its own
// sequence header and the send time, for each acks and compression: the
// topic's end offsets count exactly what was sent, and consuming it finds
// every sequence number once.
func TestProducesEveryItem(t *testing.T) {
	b := kafkatest.Get(t)
	for _, tc := range []struct{ acks, compression string }{{"all", "none"}, {"1", "zstd"}, {"0", "lz4"}, {"all", "gzip"}, {"1", "snappy"}} {
		t.Run(tc.acks+"-"+tc.compression, func(t *testing.T) {
			topic := b.Topic(t, "every", 3, 1, nil)
			cfg := config(b.Bootstrap(), topic)
			cfg.Acks, cfg.Compression, cfg.Idempotent = tc.acks, tc.compression, tc.acks == "all"
			cfg.Headers = map[string]string{"team": "platform"}
			d := newDriver(t, cfg)
			g := newGen(t, nil)
			const batches, per = 40, 10
			warm := int64(0)
			if tc.acks == "0" {
				// A broker drops a request it cannot take without acks
				// (a partition not led yet just after its topic was
				// created) and says nothing: Kafka's acks 0. One
				// acknowledged record per partition first.
				warm = 3
				wc := b.Client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
				for p := int32(0); p < 3; p++ {
					r := &kgo.Record{Topic: topic, Partition: p, Headers: []kgo.RecordHeader{{Key: "warm"}}}
					if err := wc.ProduceSync(context.Background(), r).FirstErr(); err != nil {
						t.Fatal(err)
					}
				}
			}
			for i := 0; i < batches; i++ {
				bt := g.Next(uint64(1+i*per), per, time.Now())
				if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
					t.Fatalf("send %d: %+v", i, o)
				}
			}
			if tc.acks == "0" {
				// Written, not acknowledged: wait for the broker to have them.
				testutil.Eventually(t, 20*time.Second, func() bool { return b.EndOffsets(t, topic) == batches*per+warm }, "the broker holds %d records", batches*per)
			}
			if n := b.EndOffsets(t, topic); n != batches*per+warm {
				t.Fatalf("the topic holds %d records, want %d", n-warm, batches*per)
			}
			seen := map[uint64]bool{}
			cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			for len(seen) < batches*per && ctx.Err() == nil {
				cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
					h := map[string]string{}
					for _, x := range r.Headers {
						h[x.Key] = string(x.Value)
					}
					if _, ok := h["warm"]; ok {
						return
					}
					seq, err := strconv.ParseUint(h[payload.HeaderSeq], 10, 64)
					if err != nil || h[payload.HeaderSent] == "" || h["team"] != "platform" || h[payload.HeaderCount] != "" {
						t.Fatalf("record headers %v", h)
					}
					if seen[seq] {
						t.Fatalf("sequence %d twice", seq)
					}
					seen[seq] = true
					if !strings.HasPrefix(string(r.Value), "{") {
						t.Fatalf("record value %q is not one event", r.Value)
					}
				})
			}
			if len(seen) != batches*per {
				t.Fatalf("consumed %d distinct items, want %d", len(seen), batches*per)
			}
		})
	}
}

// keys: field puts every event with the same field value on one partition,
// keyed by that value; round_robin spreads records evenly.
func TestKeys(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "keys", 4, 1, nil)
	cfg := config(b.Bootstrap(), topic)
	cfg.Keys, cfg.KeyField = KeysField, "tenant"
	d := newDriver(t, cfg)
	g := newGen(t, map[string]string{"tenant": "{{choice red green blue}}"})
	for i := 0; i < 30; i++ {
		bt := g.Next(uint64(1+i*5), 5, time.Now())
		if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
			t.Fatalf("send: %+v", o)
		}
	}
	partOf := map[string]int32{}
	cl := b.Client(t, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for n := 0; n < 150 && ctx.Err() == nil; {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			n++
			k := string(r.Key)
			if k != "red" && k != "green" && k != "blue" || !strings.Contains(string(r.Value), `"tenant":"`+k+`"`) {
				t.Fatalf("record key %q for %s", k, r.Value)
			}
			if p, ok := partOf[k]; ok && p != r.Partition {
				t.Fatalf("key %s on partitions %d and %d", k, p, r.Partition)
			}
			partOf[k] = r.Partition
		})
	}
	if len(partOf) != 3 {
		t.Fatalf("keys seen: %v", partOf)
	}

	rr := b.Topic(t, "rr", 4, 1, nil)
	cfg = config(b.Bootstrap(), rr)
	cfg.Keys = KeysRoundRobin
	d = newDriver(t, cfg)
	for i := 0; i < 40; i++ {
		bt := g.Next(uint64(1+i), 1, time.Now())
		if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
			t.Fatalf("send: %+v", o)
		}
	}
	offs, err := b.Admin(t).ListEndOffsets(ctx, rr)
	if err != nil {
		t.Fatal(err)
	}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Offset != 10 {
			t.Errorf("round robin: partition %d holds %d records, want 10", o.Partition, o.Offset)
		}
	})
}

// A producer whose buffer of unacknowledged records is full refuses
// further sends at once (backpressure), without blocking the caller; the
// records it held are delivered once the broker answers again.
func TestBufferFullIsRefused(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "full", 1, 1, nil)
	cfg := config(b.Bootstrap(), topic)
	cfg.MaxBuffered, cfg.Timeout = 20, pipebench.Duration(20*time.Second)
	d := newDriver(t, cfg)
	g := newGen(t, nil)
	b.Proxy.Set(kafkatest.Hold)
	var wg sync.WaitGroup
	var mu sync.Mutex
	classes := map[pipebench.Class]int{}
	var refused pipebench.Outcome
	start := time.Now()
	for i := 0; i < 30; i++ {
		bt := g.Next(uint64(1+i), 1, time.Now())
		wg.Add(1)
		d.SendAsync(context.Background(), &bt, func(_ time.Time, o pipebench.Outcome) {
			mu.Lock()
			classes[o.Class]++
			if o.Class == pipebench.ClassRefused {
				refused = o
			}
			mu.Unlock()
			wg.Done()
		})
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("handing 30 sends to a producer that holds 20 took %v: it blocked", el)
	}
	b.Proxy.Set(kafkatest.Pass)
	wg.Wait()
	if classes[pipebench.ClassOK] != 20 || classes[pipebench.ClassRefused] != 10 || refused.Detail != "buffer full" || refused.Message == "" {
		t.Fatalf("outcomes %v, refused %+v; want 20 ok and 10 refused buffer full", classes, refused)
	}
	if n := b.EndOffsets(t, topic); n != 20 {
		t.Fatalf("the topic holds %d records, want the 20 accepted", n)
	}
}

// A record larger than the topic's max.message.bytes is an error with the
// broker's reason, not backpressure.
func TestMessageTooLarge(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "large", 1, 1, map[string]string{"max.message.bytes": "64"})
	d := newDriver(t, config(b.Bootstrap(), topic))
	g := newGen(t, nil)
	bt := g.Next(1, 1, time.Now())
	o := d.Send(context.Background(), &bt)
	if o.Class != pipebench.ClassError || o.Code != int(kerr.MessageTooLarge.Code) || o.Detail != kerr.MessageTooLarge.Message || o.Unreached ||
		!strings.Contains(o.Message, "MESSAGE_TOO_LARGE") {
		t.Fatalf("a record above max.message.bytes: %+v", o)
	}
}

// A producer the broker throttles for its client id's byte-rate quota
// fills its buffer; the sends it cannot take then are refused as
// "throttled" (backpressure), and every record it took is delivered.
func TestQuotaThrottleIsRefused(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "quota", 1, 1, nil)
	cfg := config(b.Bootstrap(), topic)
	cfg.ClientID, cfg.MaxBuffered, cfg.Timeout = "pipebench-"+topic, 12, pipebench.Duration(60*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	id := cfg.ClientID
	resp, err := b.Admin(t).AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &id}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10240}},
	}})
	if err != nil || len(resp) != 1 || resp[0].Err != nil {
		t.Fatalf("set the quota: %v %+v", err, resp)
	}
	d := newDriver(t, cfg)
	g := newGen(t, nil)
	var mu sync.Mutex
	var ok, throttled int
	var other []pipebench.Outcome
	var wg sync.WaitGroup
	seq := uint64(1)
	burst := func(n int) {
		for i := 0; i < n; i++ {
			bt := g.Next(seq, 1, time.Now())
			seq++
			bt.Body = make([]byte, 10240)
			wg.Add(1)
			d.SendAsync(ctx, &bt, func(_ time.Time, o pipebench.Outcome) {
				mu.Lock()
				switch {
				case o.Class == pipebench.ClassOK:
					ok++
				case o.Class == pipebench.ClassRefused && o.Detail == "throttled":
					throttled++
				default:
					other = append(other, o)
				}
				mu.Unlock()
				wg.Done()
			})
		}
	}
	// 12 records of 10 KiB at once against 10 KiB/s (the broker measures
	// over 10 s or more): it throttles the client for about 2 s after
	// them; the sends past the buffer of 12 made after it said so are
	// refused as throttled, those before it as buffer full.
	// The broker applies a quota when its metadata reaches the quota
	// manager, a moment after the alteration was acknowledged (on a
	// loaded machine, seconds): a burst sent before that is not
	// throttled, so burst again each second until the broker says it
	// throttles.
	last := time.Time{}
	testutil.Eventually(t, 45*time.Second, func() bool {
		if d.clients[0].hooks.throttled.Load() > 0 {
			return true
		}
		if time.Since(last) >= time.Second {
			burst(24)
			last = time.Now()
		}
		return false
	}, "the broker throttles the producer")
	burst(24)
	wg.Wait()
	for _, o := range other {
		if o.Class != pipebench.ClassRefused || o.Detail != "buffer full" {
			t.Errorf("a send neither accepted nor refused for the buffer: %+v", o)
		}
	}
	if throttled == 0 || ok < 12 {
		t.Fatalf("ok %d, throttled %d, refused before the throttle was known %d: want sends refused as throttled", ok, throttled, len(other))
	}
	if n := b.EndOffsets(t, topic); n != int64(ok) {
		t.Errorf("the topic holds %d records, %d were acknowledged", n, ok)
	}
}

// Many producers are opened at Start and each holds its connection.
func TestConnections(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "conns", 2, 1, nil)
	cfg := config(b.Bootstrap(), topic)
	cfg.Connections = 40
	before := established(t, b.Bootstrap())
	d := newDriver(t, cfg)
	if n := d.OpenConnections(); n != 40 {
		t.Fatalf("%d producers connected, want 40", n)
	}
	// The kernel's count of the connections to the broker agrees with
	// the producers' own: each holds its produce connection (opened at
	// Start) and the one its metadata came from.
	var held int64
	testutil.Eventually(t, 20*time.Second, func() bool {
		held = 0
		for _, p := range d.clients {
			held += p.hooks.open.Load()
		}
		return int64(established(t, b.Bootstrap())-before) == held
	}, "the kernel's count of connections to the broker matches the producers'")
	if held < 2*40 {
		t.Fatalf("40 producers hold %d connections, want at least 2 each", held)
	}
	g := newGen(t, nil)
	for i := 0; i < 80; i++ {
		bt := g.Next(uint64(1+i), 1, time.Now())
		if o := d.Send(context.Background(), &bt); o.Class != pipebench.ClassOK {
			t.Fatalf("send: %+v", o)
		}
	}
	if n := b.EndOffsets(t, topic); n != 80 {
		t.Fatalf("the topic holds %d records, want 80", n)
	}
}

// Bad configurations say which key is wrong.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Acks = "2" }, "acks:"},
		{func(c *Config) { c.Acks, c.Idempotent = "1", true }, "idempotent:"},
		{func(c *Config) { c.Compression = "brotli" }, "compression:"},
		{func(c *Config) { c.Keys = KeysField }, "key_field:"},
		{func(c *Config) { c.Keys = "random" }, "keys:"},
		{func(c *Config) { c.Topic = "bad topic" }, "topic:"},
		{func(c *Config) { c.Bootstrap = "nohost" }, "bootstrap:"},
		{func(c *Config) { c.SASL.Mechanism = "GSSAPI" }, "sasl.mechanism:"},
		{func(c *Config) { c.SASL.Mechanism = "PLAIN" }, "sasl.user:"},
		{func(c *Config) { c.TLS.CAFile = "/nonexistent/ca.pem" }, "tls.ca_file:"},
		{func(c *Config) { c.BatchSize = 10 }, "batch_size:"},
	} {
		c := DefaultConfig()
		tc.set(c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if _, err := New(*DefaultConfig(), "http://127.0.0.1:4318"); err == nil || !strings.Contains(err.Error(), "bootstrap") {
		t.Errorf("an http target: %v", err)
	}
}

// fieldValue finds a field's value: a string's contents up to its
// unescaped closing quote, or a number as written.
func TestFieldValue(t *testing.T) {
	if v := fieldValue([]byte(`{"n":12,"t":"a\"b"}`), []byte(`"t":`)); string(v) != `a\"b` {
		t.Errorf("field t: %q", v)
	}
	// A quote after an even number of backslashes ends the string.
	if v := fieldValue([]byte(`{"t":"a\\","u":"\\\"b"}`), []byte(`"t":`)); string(v) != `a\\` {
		t.Errorf("field t: %q", v)
	}
	if v := fieldValue([]byte(`{"t":"a\\","u":"\\\"b\\\\"}`), []byte(`"u":`)); string(v) != `\\\"b\\\\` {
		t.Errorf("field u: %q", v)
	}
	if v := fieldValue([]byte(`{"n":12,"t":"x"}`), []byte(`"n":`)); string(v) != "12" {
		t.Errorf("field n: %q", v)
	}
}

// established counts the TCP connections in state ESTABLISHED to addr
// (host:port) in the kernel's socket table (/proc/net/tcp and tcp6), as
// `ss -tn state established dst addr` would.
func established(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(":%04X", p)
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fs := strings.Fields(line)
			// local, remote, state: 01 is ESTABLISHED.
			if len(fs) > 3 && strings.HasSuffix(fs[2], want) && fs[3] == "01" {
				n++
			}
		}
	}
	return n
}

// A broker that takes the requests and answers none (the proxy holds the
// connection: a broker frozen in a pause): the idempotent producer cannot
// fail records already sent, so the driver ends each send itself as a
// delivery timeout about a second past its timeout, not never; once the
// broker answers again, sends succeed.
func TestSilentBrokerSendsTimeOut(t *testing.T) {
	b := kafkatest.Get(t)
	topic := b.Topic(t, "silent", 1, 1, nil)
	cfg := config(b.Bootstrap(), topic)
	cfg.Timeout = pipebench.Duration(2 * time.Second)
	d := newDriver(t, cfg)
	g := newGen(t, nil)
	seq := uint64(1)
	send := func() pipebench.Outcome {
		bt := g.Next(seq, 1, time.Now())
		seq++
		return d.Send(context.Background(), &bt)
	}
	if o := send(); o.Class != pipebench.ClassOK {
		t.Fatalf("before the broker went silent: %+v", o)
	}
	b.Proxy.Set(kafkatest.Hold)
	type result struct {
		o    pipebench.Outcome
		took time.Duration
	}
	results := make(chan result, 5)
	var calls [5]atomic.Int32 // each send's outcomes: exactly one
	for i := 0; i < 5; i++ {
		bt := g.Next(seq, 1, time.Now())
		seq++
		start := time.Now()
		d.SendAsync(context.Background(), &bt, func(_ time.Time, o pipebench.Outcome) {
			if calls[i].Add(1) == 1 {
				results <- result{o, time.Since(start)}
			}
		})
	}
	for i := 0; i < 5; i++ {
		select {
		case r := <-results:
			if r.o.Class != pipebench.ClassTimeout || r.o.Detail != "delivery timeout" || r.took < 2*time.Second || r.took > 10*time.Second {
				t.Errorf("a send to a silent broker ended after %v with %+v, want a delivery timeout after 2-3 s", r.took, r.o)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("send %d to a silent broker had no outcome after 30 s", i)
		}
	}
	b.Proxy.Set(kafkatest.Pass)
	var o pipebench.Outcome
	testutil.Eventually(t, 60*time.Second, func() bool { o = send(); return o.Class == pipebench.ClassOK }, "a send succeeds once the broker answers again (last: %+v)", testutil.Lazy(func() string { return fmt.Sprintf("%+v", o) }))
	// The records the timed-out sends left with the producer settle now
	// (written or failed); their sends already had their outcome and get
	// no second one.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.clients[0].cl.Flush(ctx); err != nil {
		t.Fatalf("the producer's held records did not settle: %v", err)
	}
	for i := range calls {
		if n := calls[i].Load(); n != 1 {
			t.Errorf("send %d had %d outcomes, want 1", i, n)
		}
	}
}
