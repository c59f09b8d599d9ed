// Package natsdriver publishes batches over NATS: core publish, or JetStream
// publish waiting for each ack (sync) or with a bounded window of
// outstanding acks per connection (async). Connections are opened at start
// and held open; sends are spread over them in turn. Publish-ack refusals
// are outcome classes: a full stream (discard new) is refused, no stream
// listening is an error, a missing ack a timeout, a server that never
// answered the connection refused and unreached.
//
// The driver speaks the NATS client protocol itself (package wire) rather
// than through nats.go: a scenario holds thousands of connections, and
// nats.go's fixed state per connection (a 32 KiB read buffer, a parse
// scratch, three goroutines) alone came to 80 MB at 2,000 of them. A wire
// connection keeps one goroutine and a 1 KiB read buffer, and no write
// buffer while idle. JetStream sync and async publishes share one ack path:
// each message carries a reply subject of its connection, which is
// subscribed to once, and the connection's reader settles the acks. It is
// tested against the real nats-server (its conformance suite, the
// reconnection, PING, auth, max_payload and /connz tests here, and the
// end-to-end tests of internal/e2e/natse2e). The sink and the observer keep
// nats.go: they hold a connection or two.
package natsdriver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	js "github.com/nats-io/nats.go/jetstream"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/driver/nats/wire"
	"github.com/pipebench/pipebench/internal/conn/fdlimit"
	"github.com/pipebench/pipebench/internal/conn/netclass"
	"github.com/pipebench/pipebench/internal/format/jsonsplit"
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
	flusher *wire.Flusher
	runID   string
	auth    wire.Options // the credentials, NKey and TLS of every connection
}

type conn struct {
	wc      *wire.Conn
	subject string // the subject with {conn} filled in
	// JetStream: publishes carry the reply subject prefix+token; the
	// connection's reader settles their acks.
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

// refusing reports whether the servers of this connection refuse TCP
// connections now (checked at most every 100 ms).
func (c *conn) refusing() bool {
	c.probeMu.Lock()
	defer c.probeMu.Unlock()
	if time.Since(c.probeAt) < 100*time.Millisecond {
		return c.probeDown
	}
	c.probeAt, c.probeDown = time.Now(), false
	for _, host := range c.wc.Hosts() {
		nc, err := net.DialTimeout("tcp", host, 200*time.Millisecond)
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
	if err := applyAuth(cfg, &d.auth); err != nil {
		return nil, err
	}
	var id [8]byte
	rand.Read(id[:])
	d.runID = hex.EncodeToString(id[:])
	return d, nil
}

// flushers is how many goroutines write out the publishes of every
// connection between the writes publishers make themselves.
const flushers = 4

// Start opens every connection. A server that refuses connections does not
// fail Start: the connections keep retrying in the background and sends
// meanwhile are classified refused and unreached. A server that refuses
// the credentials fails it.
func (d *Driver) Start(ctx context.Context) error {
	if err := fdlimit.Ensure(d.cfg.Connections + fdlimit.Margin); err != nil {
		return pipebench.UsageError(fmt.Sprintf("nats driver: connections: %d", d.cfg.Connections), "", err)
	}
	d.flusher = wire.NewFlusher(flushers, d.cfg.Connections)
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
				if len(errs) < 3 {
					errs = append(errs, err)
				}
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
		var se *wire.ServerError
		if errors.As(err, &se) && se.IsAuth() {
			// Credentials are the scenario's: a usage error, found
			// before any load is sent.
			return pipebench.UsageError(fmt.Sprintf("the NATS server at %s refused the credentials", pipebench.RedactURL(d.urls)),
				"check the user and password (or token) in target.url, e.g. nats://${NATS_USER}:${NATS_PASSWORD}@host:4222, or target.creds / target.nkey", err)
		}
		return fmt.Errorf("open %d NATS connections to %s: %w", d.cfg.Connections, pipebench.RedactURL(d.urls), err)
	}
	return nil
}

func (d *Driver) open(i int) (*conn, error) {
	c := &conn{subject: strings.ReplaceAll(d.cfg.Subject, "{conn}", strconv.Itoa(i))}
	opts := wire.Options{
		URLs:          splitURLs(d.urls),
		Name:          "pipebench-" + strconv.Itoa(i),
		Timeout:       5 * time.Second,
		ReconnectWait: 250 * time.Millisecond,
		Flusher:       d.flusher,
		TLS:           d.auth.TLS,
		Sign:          d.auth.Sign,
		NKey:          d.auth.NKey,
		JWT:           d.auth.JWT,
		NoDiscovery:   d.cfg.NoDiscovery,
	}
	if d.cfg.Mode != ModeCore {
		c.prefix = ackPrefix + d.runID + "." + strconv.Itoa(i) + "."
		c.room = make(chan struct{}, d.cfg.Window)
		c.pending = make(map[uint64]*ackBatch) // grows with use: 2,000 connections x a window of 256 presized cost 20 MB
		opts.Subscribe = c.prefix + "*"
		opts.OnMsg = c.ack
	}
	wc, err := wire.Dial(opts)
	if err != nil {
		return nil, err
	}
	c.wc = wc
	return c, nil
}

// OpenConnections implements pipebench.ConnectionReporter: the connections
// that are connected now.
func (d *Driver) OpenConnections() int {
	n := 0
	for _, c := range d.conns {
		if c != nil && c.wc.Connected() {
			n++
		}
	}
	return n
}

// Shutdown flushes and closes every connection (the flushes of all of
// them waited for together, a second at most).
func (d *Driver) Shutdown(ctx context.Context) error {
	var pongs []<-chan struct{}
	for _, c := range d.conns {
		if c != nil && c.wc.Connected() {
			pongs = append(pongs, c.wc.Flush())
		}
	}
	wait := time.NewTimer(time.Second)
	defer wait.Stop()
wait:
	for _, p := range pongs {
		select {
		case <-p:
		case <-wait.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, c := range d.conns {
		if c != nil {
			c.wc.Close()
		}
	}
	end := time.NewTimer(2 * time.Second)
	defer end.Stop()
closing:
	for _, c := range d.conns {
		if c != nil {
			select {
			case <-c.wc.Done():
			case <-end.C:
				break closing
			}
		}
	}
	if d.flusher != nil {
		d.flusher.Stop()
	}
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
	if !c.wc.Connected() {
		return c.down()
	}
	subject := c.subject
	if d.keyed {
		subject = strings.ReplaceAll(subject, "{key}", b.Key)
	}
	if d.cfg.Mode == ModeCore {
		if err := d.eachMessage(b, func(hdr, data []byte) error {
			return c.wc.Publish(subject, nil, hdr, data)
		}); err != nil {
			return classify(err)
		}
		return pipebench.Outcome{}
	}
	return d.sendAcked(ctx, c, subject, b, d.cfg.Mode == ModeJS)
}

// scratch holds the item slices of split batches and the header blocks.
type scratch struct {
	items [][]byte
	hdr   []byte
	block []byte // the items' header block, made once a batch
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{items: make([][]byte, 0, 1024), hdr: make([]byte, 0, 256), block: make([]byte, 0, 256)}
}}

// eachMessage calls fn with each message of a batch, its header block (nil
// for none) and its body: one per item when it splits (a JSON array body
// of exactly Count events, Split on), else the whole batch as one. The
// slices are reused from one call to the next (a publish copies them out),
// so fn must not keep them. Only the headers a sink needs travel: the
// sequence headers (each item its own sequence number) and any others the
// generator set, but not a count of 1 nor the content type.
func (d *Driver) eachMessage(b *pipebench.Batch, fn func(hdr, data []byte) error) error {
	sc := scratchPool.Get().(*scratch)
	defer func() {
		clear(sc.items)
		sc.items = sc.items[:0]
		scratchPool.Put(sc)
	}()
	var items [][]byte
	if d.cfg.Split && b.Count > 1 {
		// The events as the generator recorded them, else as a scan of
		// the body finds them.
		if items = payload.Items(b, sc.items); items == nil {
			items = jsonsplit.Array(b.Body, b.Count, sc.items)
		}
		if items != nil {
			sc.items = items
		}
	}
	if items == nil {
		sc.hdr = headerBlock(sc.hdr[:0], b, false, 0)
		return fn(blockOrNil(sc.hdr), b.Body)
	}
	// The items' header blocks differ in the sequence number only, if
	// they carry it: the block is made once, with the number written as
	// 0, and each item's is that block with its own number in place.
	block, at := headerBlockAt(sc.block[:0], b, true, 0)
	sc.block = block
	hdr := blockOrNil(block)
	for i, it := range items {
		if at >= 0 {
			sc.hdr = append(strconv.AppendUint(append(sc.hdr[:0], block[:at]...), b.Seq+uint64(i), 10), block[at+1:]...)
			hdr = sc.hdr
		}
		if err := fn(hdr, it); err != nil {
			return err
		}
	}
	return nil
}

func blockOrNil(h []byte) []byte {
	if len(h) == 0 {
		return nil
	}
	return h
}

// headerBlock appends the NATS header block of a message of b to buf
// (nothing when it has no headers). For an item of a split batch the
// count header is left out and the sequence header is the item's seq;
// for a whole batch a count of 1 is left out. A header the batch names
// twice travels once, with its last value.
func headerBlock(buf []byte, b *pipebench.Batch, item bool, seq uint64) []byte {
	buf, _ = headerBlockAt(buf, b, item, seq)
	return buf
}

// headerBlockAt is headerBlock, also saying where in buf the item's
// sequence number starts (-1: the block has none).
func headerBlockAt(buf []byte, b *pipebench.Batch, item bool, seq uint64) ([]byte, int) {
	at := -1
	n := 0
	for i, h := range b.Headers {
		if payload.LeftOut(b.Headers, i, item) {
			continue
		}
		if n == 0 {
			buf = append(buf, "NATS/1.0\r\n"...)
		}
		n++
		buf = append(buf, h.Name...)
		buf = append(buf, ": "...)
		if item && h.Name == payload.HeaderSeq {
			at = len(buf)
			buf = strconv.AppendUint(buf, seq, 10)
		} else {
			buf = append(buf, h.Value...)
		}
		buf = append(buf, '\r', '\n')
	}
	if n > 0 {
		buf = append(buf, '\r', '\n')
	}
	return buf, at
}

// ackPrefix starts the reply subjects of JetStream publishes:
// _PBACK.<run>.<connection>.<token>.
const ackPrefix = "_PBACK."

// ackBatch is one Send's outstanding acks.
type ackBatch struct {
	left  atomic.Int64 // acks awaited, plus one while still publishing
	done  chan struct{}
	mu    sync.Mutex
	worst pipebench.Outcome // the first failure
}

func newAckBatch() *ackBatch {
	ab := &ackBatch{done: make(chan struct{})}
	ab.left.Store(1)
	return ab
}

func (ab *ackBatch) fail(o pipebench.Outcome) {
	ab.mu.Lock()
	if ab.worst.Class == pipebench.ClassOK {
		ab.worst = o
	}
	ab.mu.Unlock()
}

func (ab *ackBatch) outcome() pipebench.Outcome {
	ab.mu.Lock()
	defer ab.mu.Unlock()
	return ab.worst
}

func (ab *ackBatch) release() {
	if ab.left.Add(-1) == 0 {
		close(ab.done)
	}
}

var (
	errWindowFull = errors.New("no room in the window of outstanding acks")
	errAckFailed  = errors.New("publish not acknowledged")
)

// sendAcked publishes every message of the batch with a reply subject of
// its connection, each once there is room in the connection's window, and
// waits for their acks: async, all of them at the end; sync, each before
// the next is published. The whole Send is bounded by the timeout (one
// timer per Send, none per message).
func (d *Driver) sendAcked(ctx context.Context, c *conn, subject string, b *pipebench.Batch, sync bool) pipebench.Outcome {
	ab := newAckBatch()
	timer := time.NewTimer(d.timeout)
	defer timer.Stop()
	expired := false
	var rb []byte
	err := d.eachMessage(b, func(hdr, data []byte) error {
		mab := ab
		if sync {
			mab = newAckBatch()
		}
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
		c.pending[tok] = mab
		c.amu.Unlock()
		mab.left.Add(1)
		rb = strconv.AppendUint(append(rb[:0], c.prefix...), tok, 10)
		if err := c.wc.Publish(subject, rb, hdr, data); err != nil {
			if c.take(tok) != nil {
				mab.release()
			}
			return err
		}
		if !sync {
			return nil
		}
		mab.release()
		select {
		case <-mab.done:
		case <-timer.C:
			expired = true
			if c.abandon(mab) == 0 {
				<-mab.done // its ack is being settled now
			}
			return errTimeout
		case <-ctx.Done():
			c.abandon(mab)
			return ctx.Err()
		}
		if o := mab.outcome(); o.Class != pipebench.ClassOK {
			ab.fail(o)
			return errAckFailed
		}
		return nil
	})
	switch {
	case errors.Is(err, errWindowFull):
		ab.fail(pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout",
			Message: fmt.Sprintf("%v (%d) within %s", err, d.cfg.Window, d.timeout)})
	case errors.Is(err, errTimeout):
		ab.fail(pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout",
			Message: "no publish ack within " + d.timeout.String()})
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		c.abandon(ab)
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: err.Error()}
	case err != nil && err != errAckFailed:
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
	return ab.outcome()
}

var errTimeout = errors.New("no publish ack in time")

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

// ack settles one publish ack, _PBACK.<run>.<connection>.<token>; the
// connection's reader calls it.
func (c *conn) ack(subject, hdr, data []byte) {
	dot := bytes.LastIndexByte(subject, '.')
	if dot < 0 {
		return
	}
	var tok uint64
	for _, ch := range subject[dot+1:] {
		if ch < '0' || ch > '9' {
			return
		}
		tok = tok*10 + uint64(ch-'0')
	}
	ab := c.take(tok)
	if ab == nil {
		return // abandoned: its Send timed out
	}
	if o := ackOutcome(hdr, data); o.Class != pipebench.ClassOK {
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
func ackOutcome(hdr, data []byte) pipebench.Outcome {
	if len(data) == 0 {
		if status(hdr) == 503 {
			return classify(js.ErrNoStreamResponse)
		}
		return classify(js.ErrInvalidJSAck)
	}
	if bytes.Contains(data, ackError) {
		var r struct {
			Error *js.APIError `json:"error"`
		}
		if err := json.Unmarshal(data, &r); err == nil && r.Error != nil {
			return classify(r.Error)
		}
	}
	if !bytes.Contains(data, ackStream) {
		return classify(js.ErrInvalidJSAck)
	}
	return pipebench.Outcome{}
}

// status is the status code of a header block ("NATS/1.0 503\r\n..."),
// or 0.
func status(hdr []byte) int {
	line, _, _ := bytes.Cut(hdr, []byte("\r\n"))
	rest, ok := bytes.CutPrefix(line, []byte("NATS/1.0"))
	if !ok {
		return 0
	}
	rest = bytes.TrimLeft(rest, " ")
	if len(rest) < 3 {
		return 0
	}
	n, err := strconv.Atoi(string(rest[:3]))
	if err != nil {
		return 0
	}
	return n
}

// down classifies a send on a connection that is not connected now.
func (c *conn) down() pipebench.Outcome {
	err := c.wc.LastError()
	msg := "not connected"
	if err != nil {
		msg = err.Error()
	}
	if errors.Is(err, syscall.ECONNREFUSED) || strings.Contains(msg, "connection refused") || c.refusing() {
		if !strings.Contains(msg, "refused") {
			msg = "connection refused: " + msg
		}
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "connection refused", Message: msg, Unreached: true, Unsent: pipebench.OwnerSystem}
	}
	if !c.wc.EverConnected() {
		// Nothing took the connection (unreachable, a connect that timed
		// out, a name that does not resolve, a TLS handshake that failed),
		if o := netclass.Classify(err); err != nil && o.Unreached {
			return o
		}
		// or the server takes connections but never completed the NATS
		// handshake (it speaks first): not a NATS server.
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: netclass.DetailMismatch, Unreached: true,
			Message: "the server accepts connections but never completed the NATS handshake: " + msg}
	}
	// The connection is down (the server closed it or went away): the
	// message was not written.
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "disconnected", Message: msg, Unsent: pipebench.OwnerSystem}
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
	case errors.Is(err, js.ErrNoStreamResponse):
		return pipebench.Outcome{Class: pipebench.ClassError, Code: 503, Detail: "no responders", Message: msg}
	case errors.Is(err, context.DeadlineExceeded):
		return pipebench.Outcome{Class: pipebench.ClassTimeout, Detail: "ack timeout", Message: msg}
	case errors.Is(err, context.Canceled):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "cancelled", Message: msg}
	case errors.Is(err, wire.ErrMaxPayload):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "message too large", Message: msg}
	case errors.Is(err, wire.ErrClosed), errors.Is(err, wire.ErrDisconnected):
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "disconnected", Message: msg}
	case errors.Is(err, syscall.ECONNREFUSED):
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "connection refused", Message: msg, Unreached: true, Unsent: pipebench.OwnerSystem}
	}
	return pipebench.Outcome{Class: pipebench.ClassError, Detail: "publish error", Message: msg}
}
