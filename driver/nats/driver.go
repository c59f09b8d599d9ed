// Package natsdriver publishes batches over NATS: core publish, or JetStream
// publish waiting for each ack (sync) or with a bounded window of
// outstanding acks per connection (async). Connections are opened at start
// and held open; sends are spread over them in turn. Publish-ack refusals
// are outcome classes: a full stream (discard new) is refused, no stream
// listening is an error, a missing ack a timeout, a server that never
// answered the connection refused and unreached.
package natsdriver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/payload"
)

// Factory returns the factory of the "nats" driver.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("nats",
		"NATS core or JetStream publish (sync, or async with a window of outstanding acks) over many held connections",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			return New(*c, env.Target)
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes, pipebench.PayloadLogLines})
}

// Driver publishes over NATS. Send is safe for concurrent use.
type Driver struct {
	cfg     Config
	urls    string
	conns   []*conn
	next    atomic.Uint64
	keyed   bool // the subject has {key}
	timeout time.Duration
	// Publish options, built once: no retries (a failure is measured,
	// not hidden).
	syncOpts []js.PublishOpt
	// jetstream-async: the acks of every connection, read by a few
	// goroutines (no goroutine per connection).
	acks     chan *nats.Msg
	stop     chan struct{}
	ackers   sync.WaitGroup
	stopOnce sync.Once
	runID    string
}

type conn struct {
	nc      *nats.Conn
	js      js.JetStream // jetstream (sync) mode only
	subject string       // the subject with {conn} filled in
	everUp  atomic.Bool
	// jetstream-async: publishes carry the reply subject prefix+token; the
	// acks come back through one channel shared by every connection.
	prefix  string
	room    chan struct{} // a slot per outstanding ack: the window
	amu     sync.Mutex
	nextTok uint64
	pending map[uint64]*ackBatch
	// probe caches whether the server refused a plain TCP connection
	// lately, to tell a server gone from one being reconnected to.
	probeMu   sync.Mutex
	probeAt   time.Time
	probeDown bool
}

// refusing reports whether the server this connection was last given
// refuses TCP connections now (checked at most every 100 ms).
func (c *conn) refusing() bool {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if time.Since(c.probeAt) < 100*time.Millisecond {
		return c.probeDown
	}
	c.probeAt, c.probeDown = time.Now(), false
	for _, s := range c.nc.Servers() {
		u, err := url.Parse(s)
		if err != nil || u.Host == "" {
			continue
		}
		nc, err := net.DialTimeout("tcp", u.Host, 200*time.Millisecond)
		if err == nil {
			nc.Close()
			return false
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return false
		}
		c.probeDown = true
	}
	return c.probeDown
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// New builds a driver for cfg; target is used when cfg.URL is empty.
func New(cfg Config, target string) (*Driver, error) {
	if cfg.URL == "" && strings.HasPrefix(target, "http") {
		return nil, pipebench.UsageError("the nats driver has no nats:// server to publish to (the target "+target+" is not one)",
			"add sut: {type: jetstream}, or set target.url to nats://HOST:4222", nil)
	}
	if cfg.URL == "" {
		cfg.URL = target
		if target != "" && !strings.Contains(target, "://") {
			cfg.URL = "nats://" + target // a bare host:port
		}
	}
	if cfg.URL == "" {
		return nil, pipebench.UsageError("the nats driver has no url", "set target.url (nats://HOST:4222), or add sut: {type: jetstream}", nil)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, urls: strings.Join(splitURLs(cfg.URL), ","), keyed: strings.Contains(cfg.Subject, "{key}"), timeout: cfg.Timeout.D()}
	d.syncOpts = []js.PublishOpt{js.WithRetryAttempts(0)}
	d.stop = make(chan struct{})
	d.runID = nats.NewInbox()[len(nats.InboxPrefix):]
	return d, nil
}

// Start opens every connection. A server that refuses connections does not
// fail Start: the connections keep retrying in the background and sends
// meanwhile are classified refused and unreached.
func (d *Driver) Start(ctx context.Context) error {
	if d.cfg.Mode == ModeJSAsync {
		d.acks = make(chan *nats.Msg, min(d.cfg.Connections*d.cfg.Window, 1<<18))
		for range ackers {
			d.ackers.Add(1)
			go d.handleAcks()
		}
	}
	d.conns = make([]*conn, d.cfg.Connections)
	sem := make(chan struct{}, d.cfg.ConnectConcurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range d.conns {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			c, err := d.open(i)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			d.conns[i] = c
		}(i)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil || ctx.Err() != nil {
		d.Shutdown(context.Background())
		if err == nil {
			err = ctx.Err()
		}
		return fmt.Errorf("open %d NATS connections to %s: %w", d.cfg.Connections, d.urls, err)
	}
	return nil
}

func (d *Driver) open(i int) (*conn, error) {
	c := &conn{subject: strings.ReplaceAll(d.cfg.Subject, "{conn}", strconv.Itoa(i))}
	opts := []nats.Option{
		nats.Name("pipebench-" + strconv.Itoa(i)),
		nats.Timeout(5 * time.Second),
		nats.RetryOnFailedConnect(true),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Never buffer while disconnected: a publish then is an error,
		// not a success that may never reach the server.
		nats.ReconnectBufSize(-1),
		nats.ConnectHandler(func(*nats.Conn) { c.everUp.Store(true) }),
		nats.ReconnectHandler(func(*nats.Conn) { c.everUp.Store(true) }),
		// The server's slow-consumer and permission notices arrive here;
		// the sends classify what matters.
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}
	nc, err := nats.Connect(d.urls, opts...)
	if err != nil {
		return nil, err
	}
	if nc.IsConnected() {
		c.everUp.Store(true)
	}
	c.nc = nc
	switch d.cfg.Mode {
	case ModeJS:
		if c.js, err = js.New(nc); err != nil {
			nc.Close()
			return nil, err
		}
	case ModeJSAsync:
		c.prefix = ackPrefix + d.runID + "." + strconv.Itoa(i) + "."
		c.room = make(chan struct{}, d.cfg.Window)
		c.pending = make(map[uint64]*ackBatch) // grows with use: 2,000 connections x a window of 256 presized cost 20 MB
		// A channel subscription has no goroutine of its own: the acks
		// of all connections meet in d.acks, which holds every ack the
		// windows allow up to 2^18 (an ack that finds it full is dropped
		// by nats.go and its Send times out: a failure, never hidden).
		if _, err := nc.ChanSubscribe(c.prefix+"*", d.acks); err != nil {
			nc.Close()
			return nil, err
		}
	}
	return c, nil
}

// OpenConnections implements pipebench.ConnectionReporter: the connections
// that are connected now.
func (d *Driver) OpenConnections() int {
	n := 0
	for _, c := range d.conns {
		if c != nil && c.nc.IsConnected() {
			n++
		}
	}
	return n
}

// Shutdown flushes and closes every connection.
func (d *Driver) Shutdown(ctx context.Context) error {
	for _, c := range d.conns {
		if c == nil {
			continue
		}
		if c.nc.IsConnected() {
			fctx, cancel := context.WithTimeout(ctx, time.Second)
			c.nc.FlushWithContext(fctx)
			cancel()
		}
		c.nc.Close()
	}
	d.stopOnce.Do(func() { close(d.stop) })
	d.ackers.Wait()
	return nil
}

// Send implements pipebench.Driver: it never returns an error, it classifies.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	if ctx.Err() != nil {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()}
	}
	if len(d.conns) == 0 {
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "not started"}
	}
	c := d.conns[(d.next.Add(1)-1)%uint64(len(d.conns))]
	if !c.nc.IsConnected() {
		return c.down()
	}
	subject := c.subject
	if d.keyed {
		subject = strings.ReplaceAll(subject, "{key}", b.Key)
	}
	switch d.cfg.Mode {
	case ModeCore:
		if err := d.eachMessage(subject, b, func(m *nats.Msg) error {
			if m.Header == nil {
				return c.nc.Publish(m.Subject, m.Data)
			}
			return c.nc.PublishMsg(m)
		}); err != nil {
			return classify(err)
		}
		return pipebench.Outcome{}
	case ModeJS:
		cctx, cancel := context.WithTimeout(ctx, d.timeout)
		defer cancel()
		if err := d.eachMessage(subject, b, func(m *nats.Msg) error {
			_, err := c.js.PublishMsg(cctx, m, d.syncOpts...)
			return err
		}); err != nil {
			return classify(err)
		}
		return pipebench.Outcome{}
	default:
		return d.sendAsync(ctx, c, subject, b)
	}
}

// itemsPool recycles the item slices of split batches.
var itemsPool = sync.Pool{New: func() any { s := make([][]byte, 0, 1024); return &s }}

// eachMessage calls fn with each message of a batch: one per item when it
// splits (a JSON array body of exactly Count events, Split on), else the
// whole batch as one. The message and its header map are reused from one
// call to the next (a publish copies them out), so fn must not keep them.
// Only the headers a sink needs travel: the sequence headers (each item
// its own sequence number) and any others the generator set, but not a
// count of 1 nor the content type.
func (d *Driver) eachMessage(subject string, b *pipebench.Batch, fn func(*nats.Msg) error) error {
	var items [][]byte
	if d.cfg.Split && b.Count > 1 {
		ip := itemsPool.Get().(*[][]byte)
		defer func() {
			clear(*ip)
			*ip = (*ip)[:0]
			itemsPool.Put(ip)
		}()
		if items = splitArray(b.Body, b.Count, *ip); items != nil {
			*ip = items
		}
	}
	if items == nil {
		return fn(d.message(subject, b))
	}
	var hdr nats.Header
	for _, h := range b.Headers {
		switch h.Name {
		case payload.HeaderCount:
		default:
			hdr = setHeader(hdr, h.Name, h.Value)
		}
	}
	var seqVal []string
	if hdr != nil {
		seqVal = hdr[payload.HeaderSeq]
	}
	m := &nats.Msg{Subject: subject, Header: hdr}
	for i, it := range items {
		if seqVal != nil {
			seqVal[0] = strconv.FormatUint(b.Seq+uint64(i), 10)
		}
		m.Data = it
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// ackPrefix starts the reply subjects of async publishes:
// _PBACK.<run>.<connection>.<token>.
const ackPrefix = "_PBACK."

// ackers is how many goroutines read the acks of all connections.
const ackers = 2

// ackBatch is one Send's outstanding acks.
type ackBatch struct {
	left  atomic.Int64 // acks awaited, plus one while still publishing
	done  chan struct{}
	mu    sync.Mutex
	worst pipebench.Outcome // the first failure
}

func (ab *ackBatch) fail(o pipebench.Outcome) {
	ab.mu.Lock()
	if ab.worst.Class == pipebench.ClassOK {
		ab.worst = o
	}
	ab.mu.Unlock()
}

func (ab *ackBatch) release() {
	if ab.left.Add(-1) == 0 {
		close(ab.done)
	}
}

var errWindowFull = errors.New("no room in the window of outstanding acks")

// sendAsync publishes every message of the batch with a reply subject of
// its connection, each once there is room in the connection's window, then
// waits for all their acks; the whole Send is bounded by the timeout (one
// timer per Send, none per message).
func (d *Driver) sendAsync(ctx context.Context, c *conn, subject string, b *pipebench.Batch) pipebench.Outcome {
	ab := &ackBatch{done: make(chan struct{})}
	ab.left.Store(1)
	timer := time.NewTimer(d.timeout)
	defer timer.Stop()
	expired := false
	var rb []byte
	err := d.eachMessage(subject, b, func(m *nats.Msg) error {
		select {
		case c.room <- struct{}{}:
		default:
			select {
			case c.room <- struct{}{}:
			case <-timer.C:
				expired = true
				return errWindowFull
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		c.amu.Lock()
		c.nextTok++
		tok := c.nextTok
		c.pending[tok] = ab
		c.amu.Unlock()
		ab.left.Add(1)
		rb = strconv.AppendUint(append(rb[:0], c.prefix...), tok, 10)
		m.Reply = string(rb)
		err := c.nc.PublishMsg(m)
		m.Reply = ""
		if err != nil {
			if c.take(tok) != nil {
				ab.release()
			}
		}
		return err
	})
	switch {
	case errors.Is(err, errWindowFull):
		ab.fail(pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout",
			Message: fmt.Sprintf("%v (%d) within %s", err, d.cfg.Window, d.timeout)})
	case err != nil:
		ab.fail(classify(err))
	}
	ab.release()
	if !expired {
		select {
		case <-ab.done:
		case <-timer.C:
			expired = true
		case <-ctx.Done():
			c.abandon(ab)
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: ctx.Err().Error()}
		}
	}
	if expired && c.abandon(ab) > 0 {
		ab.fail(pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout",
			Message: "no publish ack within " + d.timeout.String()})
	}
	ab.mu.Lock()
	defer ab.mu.Unlock()
	return ab.worst
}

// take removes the outstanding ack tok and frees its room in the window;
// it returns the batch it belonged to, or nil if it was not outstanding.
func (c *conn) take(tok uint64) *ackBatch {
	c.amu.Lock()
	ab := c.pending[tok]
	if ab != nil {
		delete(c.pending, tok)
	}
	c.amu.Unlock()
	if ab != nil {
		<-c.room
	}
	return ab
}

// abandon gives up the acks of ab still outstanding and frees their room;
// it returns how many there were.
func (c *conn) abandon(ab *ackBatch) int {
	c.amu.Lock()
	n := 0
	for tok, p := range c.pending {
		if p == ab {
			delete(c.pending, tok)
			n++
		}
	}
	c.amu.Unlock()
	for i := 0; i < n; i++ {
		<-c.room
	}
	return n
}

// handleAcks reads the acks of every connection until Shutdown.
func (d *Driver) handleAcks() {
	defer d.ackers.Done()
	for {
		select {
		case <-d.stop:
			return
		case m := <-d.acks:
			d.ack(m)
		}
	}
}

// ack settles one publish ack: _PBACK.<run>.<connection>.<token>.
func (d *Driver) ack(m *nats.Msg) {
	subj := m.Subject
	dot := strings.LastIndexByte(subj, '.')
	if dot < 0 {
		return
	}
	tok, err := strconv.ParseUint(subj[dot+1:], 10, 64)
	if err != nil {
		return
	}
	rest := subj[:dot]
	ci, err := strconv.Atoi(rest[strings.LastIndexByte(rest, '.')+1:])
	if err != nil || ci < 0 || ci >= len(d.conns) || d.conns[ci] == nil {
		return
	}
	ab := d.conns[ci].take(tok)
	if ab == nil {
		return // abandoned: its Send timed out
	}
	if o := ackOutcome(m); o.Class != pipebench.ClassOK {
		ab.fail(o)
	}
	ab.release()
}

var (
	ackStream = []byte(`"stream"`)
	ackError  = []byte(`"error"`)
)

// ackOutcome reads a publish ack: {"stream":...,"seq":N} is accepted,
// {"error":{...}} an API error, an empty 503 status message no stream
// listening on the subject.
func ackOutcome(m *nats.Msg) pipebench.Outcome {
	if len(m.Data) == 0 {
		if m.Header.Get("Status") == "503" {
			return classify(js.ErrNoStreamResponse)
		}
		return classify(js.ErrInvalidJSAck)
	}
	if bytes.Contains(m.Data, ackError) {
		var r struct {
			Error *js.APIError `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &r); err == nil && r.Error != nil {
			return classify(r.Error)
		}
	}
	if !bytes.Contains(m.Data, ackStream) {
		return classify(js.ErrInvalidJSAck)
	}
	return pipebench.Outcome{}
}

// down classifies a send on a connection that is not connected now.
func (c *conn) down() pipebench.Outcome {
	err := c.nc.LastError()
	msg := "not connected"
	if err != nil {
		msg = err.Error()
	}
	if errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused") || c.refusing() {
		if !strings.Contains(msg, "refused") {
			msg = "connection refused: " + msg
		}
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "connection refused", Message: msg, Unreached: true}
	}
	if !c.everUp.Load() {
		// The server takes connections but never completed the NATS
		// handshake (it speaks first): not a NATS server.
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "protocol mismatch", Unreached: true,
			Message: "the server accepts connections but never completed the NATS handshake: " + msg}
	}
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "disconnected", Message: msg}
}

// Stream-store error codes a publish ack carries when the stream or the
// server's storage is full.
const (
	errStreamStoreFailed = 10077 // "maximum bytes/messages exceeded" with discard new
	errInsufficientRes   = 10023
	errStorageExceeded   = 10047
	errMemoryExceeded    = 10028
)

// classify turns a publish error into an outcome.
func classify(err error) pipebench.Outcome {
	msg := err.Error()
	var api *js.APIError
	switch {
	case errors.As(err, &api):
		o := pipebench.Outcome{Code: int(api.ErrorCode), Message: msg}
		switch {
		case api.ErrorCode == errStreamStoreFailed && strings.Contains(api.Description, "maximum"):
			o.Class, o.Detail = pipebench.ClassRefused, "stream full"
		case api.ErrorCode == errInsufficientRes || api.ErrorCode == errStorageExceeded || api.ErrorCode == errMemoryExceeded:
			o.Class, o.Detail = pipebench.ClassRefused, "storage full"
		case api.ErrorCode == errStreamStoreFailed:
			o.Class, o.Detail = pipebench.ClassError, "store failed"
		case api.Code == 503:
			o.Class, o.Detail = pipebench.ClassRefused, "unavailable"
		default:
			o.Class, o.Detail = pipebench.ClassError, "publish refused"
		}
		return o
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, js.ErrNoStreamResponse):
		return pipebench.Outcome{Class: pipebench.ClassError, Code: 503, Detail: "no responders", Message: msg}
	case errors.Is(err, js.ErrAsyncPublishTimeout), errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded), errors.Is(err, js.ErrTooManyStalledMsgs):
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout", Message: msg}
	case errors.Is(err, context.Canceled):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: msg}
	case errors.Is(err, nats.ErrMaxPayload):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "message too large", Message: msg}
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrDisconnected), errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrConnectionReconnecting):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "disconnected", Message: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "connection refused", Message: msg, Unreached: true}
	}
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "publish error", Message: msg}
}

// message is the whole batch as one message.
func (d *Driver) message(subject string, b *pipebench.Batch) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: b.Body}
	for _, h := range b.Headers {
		if h.Name == payload.HeaderCount && h.Value == "1" {
			continue
		}
		m.Header = setHeader(m.Header, h.Name, h.Value)
	}
	return m
}

func setHeader(h nats.Header, name, value string) nats.Header {
	if h == nil {
		h = make(nats.Header, 4)
	}
	h[name] = []string{value}
	return h
}

// splitArray returns the elements of a JSON array body if it has exactly
// want of them, else nil; they are appended to out[:0]. The elements are
// slices of body (no copy): it only scans for the commas between top-level
// elements, minding strings and nesting, and trusts the generator for the
// rest. A string is skipped in one search for its closing quote (the
// padding of an event is most of its bytes).
func splitArray(body []byte, want int, out [][]byte) [][]byte {
	t := bytes.TrimSpace(body)
	if len(t) < 2 || t[0] != '[' || t[len(t)-1] != ']' {
		return nil
	}
	if out == nil {
		out = make([][]byte, 0, want)
	}
	out = out[:0]
	inner := t[:len(t)-1]
	depth, start := 0, 1
	for i := 1; i < len(inner); i++ {
		switch inner[i] {
		case '"':
			end := closingQuote(inner, i+1)
			if end < 0 {
				return nil
			}
			i = end
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth < 0 {
				return nil
			}
		case ',':
			if depth == 0 {
				e := bytes.TrimSpace(inner[start:i])
				if len(e) == 0 || len(out) == want {
					return nil
				}
				out = append(out, e)
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil
	}
	if last := bytes.TrimSpace(inner[start:]); len(last) > 0 {
		out = append(out, last)
	} else if len(out) > 0 {
		return nil // a trailing comma
	}
	if len(out) != want {
		return nil
	}
	return out
}

// closingQuote is the index of the quote that closes the string whose
// contents start at from, or -1.
func closingQuote(b []byte, from int) int {
	for {
		k := bytes.IndexByte(b[from:], '"')
		if k < 0 {
			return -1
		}
		q := from + k
		n := 0 // backslashes just before it
		for p := q - 1; p >= from && b[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}
