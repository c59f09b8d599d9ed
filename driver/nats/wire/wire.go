// Package wire is a lean NATS client connection for publishing over
// thousands of connections at once, written from the NATS client protocol
// (INFO, CONNECT, PUB, HPUB, SUB, MSG, HMSG, PING/PONG, +OK/-ERR).
//
// nats.go keeps about 40 KiB and three goroutines per connection (a 32 KiB
// read buffer, a parse scratch, a read loop, a flusher, a callback
// dispatcher): 80 MB for 2,000 connections before a message is sent. A
// Conn here keeps one goroutine (it reads, and reconnects when the
// connection breaks), a small read buffer, and no write buffer while idle:
// a publish appends to a buffer taken from a pool under the connection's
// mutex, writes it inline once it passes a threshold, and otherwise marks
// the connection dirty for a Flusher, a few goroutines shared by every
// connection, which writes it out promptly and gives the buffer back
// (nats.go's flusher coalesces the same way).
//
// A Conn never buffers while disconnected: a publish then fails at once.
// It reconnects in the background, over its URLs in turn, forever, with a
// pause between tries. It is tested against the real nats-server.
package wire

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Errors of a publish.
var (
	// ErrDisconnected: the connection is not connected now (it is being
	// reconnected); nothing was buffered.
	ErrDisconnected = errors.New("nats: connection disconnected")
	// ErrClosed: the connection was closed.
	ErrClosed = errors.New("nats: connection closed")
	// ErrMaxPayload: the message is larger than the server's max_payload.
	ErrMaxPayload = errors.New("nats: maximum payload exceeded")
)

// ServerError is an -ERR the server sent.
type ServerError struct{ Msg string }

func (e *ServerError) Error() string { return "nats: " + e.Msg }

// IsAuth reports whether the server refused the connection's credentials.
func (e *ServerError) IsAuth() bool {
	m := strings.ToLower(e.Msg)
	return strings.Contains(m, "authorization") || strings.Contains(m, "authentication")
}

const (
	readBufSize  = 1024      // the server sends only INFO, PING, +OK/-ERR and small acks
	flushAt      = 32 << 10  // a write buffer this full is written inline
	poolBufSize  = 8 << 10   // the size of a new pooled write buffer
	poolBufMax   = 256 << 10 // a larger buffer is dropped, not pooled
	writeTimeout = 10 * time.Second
)

// Options configure a Conn.
type Options struct {
	// URLs are nats:// or tls:// URLs, tried in turn; user info is
	// user:password, or a token alone.
	URLs []string
	// Name is the connection's name in the server's /connz.
	Name string
	// Timeout bounds the dial and the handshake (INFO to PONG).
	Timeout time.Duration
	// ReconnectWait is the pause between reconnection tries.
	ReconnectWait time.Duration
	// Subscribe, when set, is a subject the connection subscribes to
	// (again on every reconnection); its messages go to OnMsg.
	Subscribe string
	// OnMsg is called by the connection's reader for each message of the
	// subscription, with the header block (nil for MSG) and the payload;
	// it must not keep the slices and must not block.
	OnMsg func(subject, hdr, data []byte)
	// Flusher writes out the publishes of idle connections; required.
	Flusher *Flusher
	// TLS is the base TLS configuration for tls:// URLs and servers that
	// require TLS (nil: the system's roots, the URL's host name).
	TLS *tls.Config
	// Sign, when set, signs the nonce the server sends (NKey or JWT
	// authentication); NKey is the public key presented with a bare NKey,
	// JWT the user JWT presented instead with a credentials file.
	Sign func(nonce []byte) ([]byte, error)
	NKey string
	JWT  string
	// NoDiscovery keeps the connection to its own URLs; by default the
	// servers a cluster announces (INFO connect_urls) are added to them.
	NoDiscovery bool
}

// ErrLameDuck breaks a connection whose server entered lame duck mode:
// the connection moves to another server at once.
var ErrLameDuck = errors.New("nats: the server entered lame duck mode")

// lameDuckAvoid is how long a server in lame duck mode is not connected
// to again while others answer.
const lameDuckAvoid = 2 * time.Minute

// Conn is one NATS client connection. Publish is safe for concurrent use.
type Conn struct {
	opts Options
	urls []*url.URL

	mu         sync.Mutex
	nc         net.Conn // nil while disconnected
	w          []byte   // pending writes, from the pool; nil when empty
	dirty      bool     // queued at the flusher
	pongs      []chan struct{}
	closed     bool
	dialing    net.Conn // the connection being handshaken, closed by Close
	lastErr    error
	maxPayload int
	// hdrLen and size hold the digits of the last header and message
	// lengths written: a run's messages mostly have one size.
	hdrLen, size lenDigits
	host         string               // the server connected to now, or last
	avoid        map[string]time.Time // servers in lame duck mode, until when
	moveNow      bool                 // reconnect without waiting: lame duck

	connected atomic.Bool
	everUp    atomic.Bool
	pings     atomic.Uint64 // server PINGs answered
	lameDucks atomic.Uint64 // lame duck notices honoured
	done      chan struct{} // closed by Close
	loopDone  chan struct{}
}

// Dial connects once (each URL in turn) and returns the connection, which
// then keeps itself connected in the background. It fails only for bad
// options or when the server refused the credentials; a server that is
// down or does not speak NATS leaves it disconnected and retrying.
func Dial(opts Options) (*Conn, error) {
	if opts.Flusher == nil {
		return nil, errors.New("wire: no flusher")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.ReconnectWait <= 0 {
		opts.ReconnectWait = 250 * time.Millisecond
	}
	c := &Conn{opts: opts, done: make(chan struct{}), loopDone: make(chan struct{}), avoid: map[string]time.Time{}}
	for _, s := range opts.URLs {
		u, err := url.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("wire: url %q: %w", s, err)
		}
		if u.Scheme != "nats" && u.Scheme != "tls" {
			return nil, fmt.Errorf("wire: url %q is not nats:// or tls://", s)
		}
		if u.Port() == "" {
			u.Host = net.JoinHostPort(u.Hostname(), "4222")
		}
		c.urls = append(c.urls, u)
	}
	if len(c.urls) == 0 {
		return nil, errors.New("wire: no url")
	}
	nc, br, err := c.connect()
	var se *ServerError
	if nc == nil && errors.As(err, &se) && se.IsAuth() {
		return nil, err
	}
	go c.loop(nc, br)
	return c, nil
}

// Connected reports whether the connection is connected now.
func (c *Conn) Connected() bool { return c.connected.Load() }

// EverConnected reports whether the connection ever completed the NATS
// handshake.
func (c *Conn) EverConnected() bool { return c.everUp.Load() }

// Pings is how many of the server's PINGs the connection answered.
func (c *Conn) Pings() uint64 { return c.pings.Load() }

// LastError is the error that last broke or failed the connection.
func (c *Conn) LastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// Hosts are the host:port of the connection's URLs, those a cluster
// announced included.
func (c *Conn) Hosts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.urls))
	for i, u := range c.urls {
		out[i] = u.Host
	}
	return out
}

// Server is the host:port of the server connected to now (or last).
func (c *Conn) Server() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.host
}

// LameDucks is how many times the connection moved off a server in lame
// duck mode.
func (c *Conn) LameDucks() uint64 { return c.lameDucks.Load() }

// discover adds the servers of connect_urls (host:port) to the URLs, with
// the scheme and credentials of the first (c.mu held).
func (c *Conn) discover(hosts []string) {
	if c.opts.NoDiscovery {
		return
	}
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err != nil {
			continue
		}
		known := false
		for _, u := range c.urls {
			known = known || u.Host == h
		}
		if !known {
			u := *c.urls[0]
			u.Host = h
			c.urls = append(c.urls, &u)
		}
	}
}

// candidates are the URLs to try, in turn from the one after the last
// server, those in lame duck mode last.
func (c *Conn) candidates() []*url.URL {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := 0
	for i, u := range c.urls {
		if u.Host == c.host {
			start = i + 1
		}
	}
	var good, lame []*url.URL
	now := time.Now()
	for i := range c.urls {
		u := c.urls[(start+i)%len(c.urls)]
		if until, ok := c.avoid[u.Host]; ok && now.Before(until) {
			lame = append(lame, u)
		} else {
			good = append(good, u)
		}
	}
	return append(good, lame...)
}

// MaxPayload is the server's max_payload (0 before the first handshake).
func (c *Conn) MaxPayload() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxPayload
}

// lenDigits is a length's decimal digits, kept while it repeats.
type lenDigits struct {
	n int
	k int // len of the digits in d; 0: none yet
	d [20]byte
}

func (l *lenDigits) append(w []byte, n int) []byte {
	if l.k == 0 || n != l.n {
		l.n, l.k = n, len(strconv.AppendInt(l.d[:0], int64(n), 10))
	}
	return append(w, l.d[:l.k]...)
}

// Publish sends a message: PUB when hdr is nil, else HPUB with hdr (a
// whole header block, "NATS/1.0\r\n...\r\n\r\n"). reply may be empty. It
// fails at once when disconnected. It copies the slices before returning.
func (c *Conn) Publish(subject string, reply, hdr, data []byte) error {
	size := len(hdr) + len(data)
	c.mu.Lock()
	if c.nc == nil {
		err := ErrDisconnected
		if c.closed {
			err = ErrClosed
		}
		c.mu.Unlock()
		return err
	}
	if size > c.maxPayload {
		c.mu.Unlock()
		return ErrMaxPayload
	}
	w := c.w
	if w == nil {
		w = getBuf()
	}
	if hdr != nil {
		w = append(w, "HPUB "...)
	} else {
		w = append(w, "PUB "...)
	}
	w = append(w, subject...)
	w = append(w, ' ')
	if len(reply) > 0 {
		w = append(w, reply...)
		w = append(w, ' ')
	}
	if hdr != nil {
		w = c.hdrLen.append(w, len(hdr))
		w = append(w, ' ')
	}
	w = c.size.append(w, size)
	w = append(w, '\r', '\n')
	w = append(w, hdr...)
	w = append(w, data...)
	w = append(w, '\r', '\n')
	c.w = w
	var err error
	if len(w) >= flushAt {
		err = c.writeLocked()
		c.releaseLocked()
	} else if !c.dirty {
		c.dirty = true
		if !c.opts.Flusher.queue(c) {
			c.dirty = false
			err = c.writeLocked()
			c.releaseLocked()
		}
	}
	c.mu.Unlock()
	return err
}

// writeLocked writes out the pending buffer (c.mu held); a failed write
// breaks the connection.
func (c *Conn) writeLocked() error {
	if c.nc == nil || len(c.w) == 0 {
		return nil
	}
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err := c.nc.Write(c.w)
	c.w = c.w[:0]
	if err != nil {
		c.breakLocked(c.nc, err)
		return fmt.Errorf("%w: %v", ErrDisconnected, err)
	}
	return nil
}

// releaseLocked gives an empty write buffer back to the pool unless the
// flusher will (c.mu held): an idle connection keeps none.
func (c *Conn) releaseLocked() {
	if !c.dirty && c.w != nil && len(c.w) == 0 {
		putBuf(c.w)
		c.w = nil
	}
}

// flushIdle writes out what is pending and gives the buffer back to the
// pool: the flusher's part.
func (c *Conn) flushIdle() {
	c.mu.Lock()
	c.dirty = false
	c.writeLocked()
	putBuf(c.w)
	c.w = nil
	c.mu.Unlock()
}

// Flush writes out what is pending and a PING; the channel is closed at
// the server's PONG (everything before it was processed) or when the
// connection breaks.
func (c *Conn) Flush() <-chan struct{} {
	ch := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc == nil {
		close(ch)
		return ch
	}
	if c.w == nil {
		c.w = getBuf()
	}
	c.w = append(c.w, "PING\r\n"...)
	c.pongs = append(c.pongs, ch)
	c.writeLocked() // a failure closed ch
	c.releaseLocked()
	return ch
}

// Close closes the connection (a handshake under way too) and stops
// reconnecting; Done is closed once its goroutine has ended.
func (c *Conn) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.done)
	if c.dialing != nil {
		c.dialing.Close()
	}
	if c.nc != nil {
		c.writeLocked()
		c.breakLocked(c.nc, ErrClosed)
	}
	putBuf(c.w)
	c.w = nil
	c.mu.Unlock()
}

// Done is closed when the connection's goroutine has ended after Close.
func (c *Conn) Done() <-chan struct{} { return c.loopDone }

// breakLocked ends the connection nc if it is still the current one.
func (c *Conn) breakLocked(nc net.Conn, err error) {
	if c.nc != nc || nc == nil {
		return
	}
	nc.Close()
	c.nc = nil
	c.connected.Store(false)
	putBuf(c.w) // what was not written is dropped, never sent on the next connection
	c.w = nil
	if !c.closed || c.lastErr == nil {
		c.lastErr = err
	}
	for _, ch := range c.pongs {
		close(ch)
	}
	c.pongs = nil
}

func (c *Conn) setErr(err error) {
	c.mu.Lock()
	c.lastErr = err
	c.mu.Unlock()
}

// loop reads the connection and reconnects it when it breaks, until Close.
func (c *Conn) loop(nc net.Conn, br *bufio.Reader) {
	defer close(c.loopDone)
	wait := time.NewTimer(time.Hour)
	wait.Stop()
	for {
		if nc != nil {
			err := c.read(nc, br)
			c.mu.Lock()
			c.breakLocked(nc, err)
			c.mu.Unlock()
			nc, br = nil, nil
		}
		c.mu.Lock()
		pause := c.opts.ReconnectWait
		if c.moveNow {
			pause, c.moveNow = time.Millisecond, false
		}
		c.mu.Unlock()
		wait.Reset(pause)
		select {
		case <-c.done:
			wait.Stop()
			return
		case <-wait.C:
		}
		nc, br, _ = c.connect()
	}
}

// connect tries each URL once; the connection it returns is installed.
func (c *Conn) connect() (net.Conn, *bufio.Reader, error) {
	var err error
	for _, u := range c.candidates() {
		var nc net.Conn
		var br *bufio.Reader
		var max int
		if nc, br, max, err = c.handshake(u); err != nil {
			c.setErr(err)
			continue
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			nc.Close()
			return nil, nil, ErrClosed
		}
		c.nc, c.maxPayload, c.host = nc, max, u.Host
		c.connected.Store(true)
		c.everUp.Store(true)
		c.mu.Unlock()
		return nc, br, nil
	}
	return nil, nil, err
}

type serverInfo struct {
	MaxPayload  int      `json:"max_payload"`
	TLSRequired bool     `json:"tls_required"`
	Headers     bool     `json:"headers"`
	Nonce       string   `json:"nonce"`
	ConnectURLs []string `json:"connect_urls"`
	LameDuck    bool     `json:"ldm"`
}

type connectMsg struct {
	Verbose      bool   `json:"verbose"`
	Pedantic     bool   `json:"pedantic"`
	TLSRequired  bool   `json:"tls_required"`
	Name         string `json:"name,omitempty"`
	Lang         string `json:"lang"`
	Version      string `json:"version"`
	Protocol     int    `json:"protocol"`
	Headers      bool   `json:"headers"`
	NoResponders bool   `json:"no_responders"`
	User         string `json:"user,omitempty"`
	Pass         string `json:"pass,omitempty"`
	Token        string `json:"auth_token,omitempty"`
	JWT          string `json:"jwt,omitempty"`
	NKey         string `json:"nkey,omitempty"`
	Sig          string `json:"sig,omitempty"`
}

// handshake dials u and completes the NATS handshake: INFO, TLS if asked
// for, CONNECT, the subscription, PING answered by PONG.
func (c *Conn) handshake(u *url.URL) (net.Conn, *bufio.Reader, int, error) {
	d := net.Dialer{Timeout: c.opts.Timeout}
	raw, err := d.Dial("tcp", u.Host)
	if err != nil {
		return nil, nil, 0, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		raw.Close()
		return nil, nil, 0, ErrClosed
	}
	c.dialing = raw
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.dialing = nil
		c.mu.Unlock()
	}()
	nc := raw
	fail := func(err error) (net.Conn, *bufio.Reader, int, error) {
		nc.Close()
		return nil, nil, 0, err
	}
	nc.SetDeadline(time.Now().Add(c.opts.Timeout))
	br := bufio.NewReaderSize(nc, readBufSize)
	line, err := readLine(br)
	if err != nil {
		return fail(fmt.Errorf("nats: no INFO from the server: %w", err))
	}
	rest, ok := cutOp(line, "INFO")
	if !ok {
		return fail(fmt.Errorf("nats: the server did not start with INFO: %.40q", line))
	}
	var info serverInfo
	if err := json.Unmarshal(rest, &info); err != nil {
		return fail(fmt.Errorf("nats: bad INFO: %w", err))
	}
	if info.MaxPayload <= 0 {
		info.MaxPayload = 1 << 20
	}
	secure := u.Scheme == "tls" || info.TLSRequired
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.opts.TLS != nil {
			cfg = c.opts.TLS.Clone()
		}
		if cfg.ServerName == "" {
			cfg.ServerName = u.Hostname()
		}
		tc := tls.Client(raw, cfg)
		if err := tc.Handshake(); err != nil {
			return fail(fmt.Errorf("nats: tls handshake: %w", err))
		}
		nc = tc
		br = bufio.NewReaderSize(nc, readBufSize)
	}
	cm := connectMsg{TLSRequired: secure, Name: c.opts.Name, Lang: "go", Version: "pipebench", Protocol: 1,
		Headers: true, NoResponders: true}
	if ui := u.User; ui != nil {
		if p, ok := ui.Password(); ok {
			cm.User, cm.Pass = ui.Username(), p
		} else {
			cm.Token = ui.Username()
		}
	}
	if c.opts.Sign != nil {
		if info.Nonce == "" {
			return fail(errors.New("nats: the server sent no nonce to sign: it does not take NKey or credentials authentication"))
		}
		sig, err := c.opts.Sign([]byte(info.Nonce))
		if err != nil {
			return fail(fmt.Errorf("nats: sign the server's nonce: %w", err))
		}
		cm.Sig = base64.RawURLEncoding.EncodeToString(sig)
		cm.JWT, cm.NKey = c.opts.JWT, c.opts.NKey
		if cm.JWT != "" {
			cm.NKey = ""
		}
	}
	js, _ := json.Marshal(cm)
	var out []byte
	out = append(append(append(out, "CONNECT "...), js...), "\r\n"...)
	if c.opts.Subscribe != "" {
		out = append(append(append(out, "SUB "...), c.opts.Subscribe...), " 1\r\n"...)
	}
	out = append(out, "PING\r\n"...)
	if _, err := nc.Write(out); err != nil {
		return fail(err)
	}
	for {
		line, err := readLine(br)
		if err != nil {
			return fail(fmt.Errorf("nats: no PONG from the server: %w", err))
		}
		switch {
		case hasOp(line, "PONG"):
			nc.SetDeadline(time.Time{})
			c.mu.Lock()
			c.discover(info.ConnectURLs)
			c.mu.Unlock()
			return nc, br, info.MaxPayload, nil
		case hasOp(line, "-ERR"):
			return fail(serverError(line))
		case hasOp(line, "PING"):
			if _, err := nc.Write([]byte("PONG\r\n")); err != nil {
				return fail(err)
			}
		}
	}
}

func serverError(line []byte) *ServerError {
	m, _ := cutOp(line, "-ERR")
	return &ServerError{Msg: strings.Trim(string(m), "' ")}
}

// read handles what the server sends until the connection fails. It
// reads into a buffer of its own (readBufSize, grown only while a larger
// message is in it) straight from the connection, so that the goroutine
// waiting in Read has a shallow stack: 2,000 idle connections keep 4 KiB
// stacks, not 8.
func (c *Conn) read(nc net.Conn, br *bufio.Reader) error {
	rd := &reader{buf: make([]byte, readBufSize)}
	if n := br.Buffered(); n > 0 { // what came after the handshake's PONG
		b, _ := br.Peek(n)
		if n > len(rd.buf) {
			rd.buf = make([]byte, n)
		}
		rd.w = copy(rd.buf, b)
	}
	for {
		if err := c.process(rd, nc); err != nil {
			return err
		}
		rd.makeRoom()
		n, err := nc.Read(rd.buf[rd.w:])
		rd.w += n
		if err != nil && n == 0 {
			return err
		}
	}
}

// reader is the read buffer: buf[r:w] is received and not yet handled;
// need, when more than w-r, is how many bytes the next operation needs.
type reader struct {
	buf        []byte
	r, w, need int
}

// makeRoom moves what is left to the front and grows the buffer for an
// operation larger than it, or shrinks it back once empty.
func (rd *reader) makeRoom() {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
		if len(rd.buf) > readBufSize {
			rd.buf = make([]byte, readBufSize)
		}
	} else if rd.r > 0 {
		rd.w = copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.r = 0
	}
	want := max(rd.need, rd.w+1)
	if rd.w == len(rd.buf) {
		want = max(want, 2*len(rd.buf)) // a line longer than the buffer
	}
	if want > len(rd.buf) {
		nb := make([]byte, want)
		copy(nb, rd.buf[:rd.w])
		rd.buf = nb
	}
}

// process handles every whole operation in the buffer.
//
//go:noinline
func (c *Conn) process(rd *reader, nc net.Conn) error {
	var args [6][]byte
	for {
		rd.need = 0
		in := rd.buf[rd.r:rd.w]
		nl := bytes.IndexByte(in, '\n')
		if nl < 0 {
			return nil
		}
		line := in[:nl]
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		used := nl + 1
		switch {
		case hasOp(line, "MSG"), hasOp(line, "HMSG"):
			h := line[0] == 'H' || line[0] == 'h'
			op, need := "MSG", 3 // MSG subject sid [reply] size
			if h {
				op, need = "HMSG", 4 // HMSG subject sid [reply] hsize size
			}
			rest, _ := cutOp(line, op)
			a := splitArgs(rest, args[:0])
			if len(a) < need || len(a) > need+1 {
				return fmt.Errorf("nats: bad %s line %.80q", op, line)
			}
			size, err1 := atoi(a[len(a)-1])
			hsize, err2 := 0, error(nil)
			if h {
				hsize, err2 = atoi(a[len(a)-2])
			}
			if err1 != nil || err2 != nil || hsize > size {
				return fmt.Errorf("nats: bad message sizes %.80q", line)
			}
			if len(in) < used+size+2 {
				rd.need = used + size + 2
				return nil
			}
			body := in[used : used+size]
			used += size + 2
			if c.opts.OnMsg != nil {
				var hdr []byte
				if h {
					hdr = body[:hsize]
				}
				c.opts.OnMsg(a[0], hdr, body[hsize:])
			}
		case hasOp(line, "PING"):
			c.pings.Add(1)
			c.mu.Lock()
			if c.nc == nc {
				if c.w == nil {
					c.w = getBuf()
				}
				c.w = append(c.w, "PONG\r\n"...)
				c.writeLocked()
				c.releaseLocked()
			}
			c.mu.Unlock()
		case hasOp(line, "PONG"):
			c.mu.Lock()
			if len(c.pongs) > 0 {
				close(c.pongs[0])
				c.pongs = c.pongs[1:]
			}
			c.mu.Unlock()
		case hasOp(line, "-ERR"):
			c.setErr(serverError(line)) // a fatal one is followed by the server closing
		case hasOp(line, "INFO"):
			rest, _ := cutOp(line, "INFO")
			var info serverInfo
			if json.Unmarshal(rest, &info) == nil {
				c.mu.Lock()
				if info.MaxPayload > 0 {
					c.maxPayload = info.MaxPayload
				}
				c.discover(info.ConnectURLs)
				c.mu.Unlock()
				if info.LameDuck {
					go c.leaveLameDuck(nc)
				}
			}
		}
		rd.r += used
	}
}

// leaveLameDuck moves the connection off a server in lame duck mode: what
// was published is flushed (its PONG awaited, a second at most), then the
// connection is closed and made again at once to another server, which
// the server in lame duck mode is not while others answer.
func (c *Conn) leaveLameDuck(nc net.Conn) {
	c.mu.Lock()
	if c.nc != nc {
		c.mu.Unlock()
		return
	}
	c.avoid[c.host] = time.Now().Add(lameDuckAvoid)
	c.mu.Unlock()
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-c.Flush():
	case <-t.C:
	}
	c.mu.Lock()
	if c.nc == nc {
		c.moveNow = true
		c.lameDucks.Add(1)
		c.breakLocked(nc, ErrLameDuck)
	}
	c.mu.Unlock()
}

// atoi parses a non-negative decimal size.
func atoi(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 10 {
		return 0, errors.New("bad size")
	}
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, errors.New("bad size")
		}
		n = n*10 + int(ch-'0')
	}
	return n, nil
}

// readLine reads one protocol line without its CRLF; the slice is valid
// until the next read (a line longer than the buffer is copied).
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		long := bytes.Clone(line)
		for err == bufio.ErrBufferFull {
			line, err = br.ReadSlice('\n')
			long = append(long, line...)
		}
		line = long
	}
	if err != nil {
		return nil, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// hasOp reports whether line is the operation op (case-insensitive),
// alone or followed by a space or tab.
func hasOp(line []byte, op string) bool {
	if len(line) < len(op) || !bytes.EqualFold(line[:len(op)], []byte(op)) {
		return false
	}
	return len(line) == len(op) || line[len(op)] == ' ' || line[len(op)] == '\t'
}

// cutOp returns what follows the operation op.
func cutOp(line []byte, op string) ([]byte, bool) {
	if !hasOp(line, op) {
		return nil, false
	}
	return bytes.TrimLeft(line[len(op):], " \t"), true
}

func splitArgs(b []byte, out [][]byte) [][]byte {
	for len(b) > 0 {
		i := 0
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		b = b[i:]
		j := 0
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		if j > 0 {
			if len(out) == cap(out) {
				return append(out, b[:j]) // more arguments than expected: the caller refuses
			}
			out = append(out, b[:j])
		}
		b = b[j:]
	}
	return out
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, poolBufSize); return &b }}

func getBuf() []byte {
	p := bufPool.Get().(*[]byte)
	b := (*p)[:0]
	*p = nil
	ptrPool.Put(p)
	return b
}

// ptrPool recycles the pointers bufPool holds, so putting a buffer back
// costs no allocation.
var ptrPool = sync.Pool{New: func() any { return new([]byte) }}

func putBuf(b []byte) {
	if b == nil || cap(b) > poolBufMax {
		return
	}
	p := ptrPool.Get().(*[]byte)
	*p = b[:0]
	bufPool.Put(p)
}

// Flusher writes out the pending publishes of connections marked dirty:
// a few goroutines for any number of connections.
type Flusher struct {
	ch   chan *Conn
	wg   sync.WaitGroup
	once sync.Once
}

// NewFlusher starts workers goroutines serving up to conns connections.
func NewFlusher(workers, conns int) *Flusher {
	f := &Flusher{ch: make(chan *Conn, conns+16)}
	for range max(1, workers) {
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			for c := range f.ch {
				c.flushIdle()
			}
		}()
	}
	return f
}

// queue hands c to the flusher; false if its queue is full (the caller
// writes inline).
func (f *Flusher) queue(c *Conn) bool {
	select {
	case f.ch <- c:
		return true
	default:
		return false
	}
}

// Stop ends the flusher's goroutines once the connections are closed.
func (f *Flusher) Stop() {
	f.once.Do(func() { close(f.ch) })
	f.wg.Wait()
}
