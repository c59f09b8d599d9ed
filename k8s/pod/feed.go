package pod

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

// The arrivals feed joins an in-cluster sink to the shards: the sink pod
// serves FeedPath on FeedPort; each shard's runner starts a FeedSink in
// place of the scenario's sink, which subscribes with the shard's first
// sequence number and hands every arrival of the shard's range to the
// shard's own arrival matching (kpi.Arrivals). So each shard's Result
// counts delivered, lost, duplicates, reordered and end-to-end latency
// from what the one sink received, exactly as with a sink of its own, and
// the merge adds them up as it does for any shards.
const (
	FeedPort = 7070
	FeedPath = "/pipebench/arrivals"
)

// A record on the feed: a kind byte and three big-endian 64-bit numbers.
const (
	recArrive    byte = 1 // seq, sent (Unix ns), arrived (Unix ns)
	recFaulted   byte = 2 // n
	recUnmatched byte = 3 // n
	recSize           = 25
)

// maxPending bounds the records held for shards that have not subscribed
// (yet, or again after a broken connection): 64 MiB, 2.7 million records.
const maxPending = 64 << 20

// Feed is the sink pod's pipebench.Arrivals: it routes each arrival to the
// subscriber whose range [lo, hi) holds its sequence number, and counts of
// faulted and unmatched items to the subscriber of the lowest range (the
// merge only adds them up); what no subscriber's range holds yet is held
// until one comes. Safe for concurrent use.
type Feed struct {
	// Also, if set, gets every call as well: the sink's own account.
	Also pipebench.Arrivals

	mu      sync.Mutex
	subs    []*feedSub // by lo, ascending
	pending []byte     // records no subscriber has taken yet
	dropped uint64     // records beyond maxPending
}

type feedSub struct {
	lo   uint64
	hi   uint64 // 0: no bound
	buf  []byte
	wake chan struct{} // capacity 1
}

var _ pipebench.Arrivals = (*Feed)(nil)

func record(kind byte, a, b, c uint64) [recSize]byte {
	var r [recSize]byte
	r[0] = kind
	binary.BigEndian.PutUint64(r[1:], a)
	binary.BigEndian.PutUint64(r[9:], b)
	binary.BigEndian.PutUint64(r[17:], c)
	return r
}

// add routes one record of kind.
func (f *Feed) add(kind byte, a, b, c uint64) {
	r := record(kind, a, b, c)
	f.mu.Lock()
	f.route(r[:])
	f.mu.Unlock()
}

// Arrive implements pipebench.Arrivals.
func (f *Feed) Arrive(seq uint64, sent, at time.Time) {
	if f.Also != nil {
		f.Also.Arrive(seq, sent, at)
	}
	f.add(recArrive, seq, uint64(sent.UnixNano()), uint64(at.UnixNano()))
}

// Faulted implements pipebench.Arrivals.
func (f *Feed) Faulted(n int) {
	if f.Also != nil {
		f.Also.Faulted(n)
	}
	f.add(recFaulted, uint64(n), 0, 0)
}

// Unmatched implements pipebench.Arrivals.
func (f *Feed) Unmatched(n int) {
	if f.Also != nil {
		f.Also.Unmatched(n)
	}
	f.add(recUnmatched, uint64(n), 0, 0)
}

// Dropped returns how many records were held for no subscriber beyond
// the bound, and so reached no shard.
func (f *Feed) Dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dropped
}

// route hands one record to its subscriber, or holds it. Call with mu.
func (f *Feed) route(r []byte) {
	var to *feedSub
	if len(f.subs) > 0 {
		if r[0] == recArrive {
			seq := binary.BigEndian.Uint64(r[1:])
			i := sort.Search(len(f.subs), func(i int) bool { return f.subs[i].lo > seq }) - 1
			if i >= 0 && (f.subs[i].hi == 0 || seq < f.subs[i].hi) {
				to = f.subs[i]
			}
		} else {
			to = f.subs[0]
		}
	}
	if to == nil {
		if len(f.pending)+len(r) > maxPending {
			f.dropped++
			return
		}
		f.pending = append(f.pending, r...)
		return
	}
	to.buf = append(to.buf, r...)
	select {
	case to.wake <- struct{}{}:
	default:
	}
}

// subscribe adds s (replacing a subscriber of the same range) and hands
// it, and the others, what was held. Call with mu.
func (f *Feed) subscribe(s *feedSub) {
	kept := f.subs[:0]
	for _, o := range f.subs {
		if o.lo != s.lo {
			kept = append(kept, o)
		}
	}
	f.subs = append(kept, s)
	sort.Slice(f.subs, func(i, j int) bool { return f.subs[i].lo < f.subs[j].lo })
	held := f.pending
	f.pending = nil
	for i := 0; i+recSize <= len(held); i += recSize {
		f.route(held[i : i+recSize])
	}
}

// unsubscribe removes s; what it had not sent yet is held again.
func (f *Feed) unsubscribe(s *feedSub) {
	for i, o := range f.subs {
		if o == s {
			f.subs = append(f.subs[:i], f.subs[i+1:]...)
			break
		}
	}
	left := s.buf
	s.buf = nil
	for i := 0; i+recSize <= len(left); i += recSize {
		f.route(left[i : i+recSize])
	}
}

// ServeHTTP serves the feed: GET FeedPath?lo=FIRST&hi=END streams the
// records of the range [FIRST, END) (no END: no bound) until the client
// goes.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != FeedPath || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	lo, err := strconv.ParseUint(r.URL.Query().Get("lo"), 10, 64)
	if err != nil {
		http.Error(w, "lo: give the shard's first sequence number", http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	var hi uint64
	if h := r.URL.Query().Get("hi"); h != "" {
		if hi, err = strconv.ParseUint(h, 10, 64); err != nil || hi <= lo {
			http.Error(w, "hi: give the first sequence number after the shard's range, above lo", http.StatusBadRequest)
			return
		}
	}
	s := &feedSub{lo: lo, hi: hi, wake: make(chan struct{}, 1)}
	f.mu.Lock()
	f.subscribe(s)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.unsubscribe(s)
		f.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	var out []byte
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.wake:
		}
		f.mu.Lock()
		out, s.buf = s.buf, out[:0]
		f.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		if _, err := w.Write(out); err != nil {
			// Not sent: held for a subscriber that comes again.
			f.mu.Lock()
			s.buf = append(out, s.buf...)
			f.mu.Unlock()
			return
		}
		fl.Flush()
	}
}

// FeedSink is a shard's sink when the run's sink is in the cluster: its
// Endpoint is the in-cluster sink's (through its Service), and what that
// sink receives in the shard's range comes back over the feed into the
// shard's arrival matching.
type FeedSink struct {
	// Target and Targets are the in-cluster sink's endpoint(s), its
	// Service's name in place of its pod's address.
	Target  string
	Targets map[string]string
	// FeedURL is http://SERVICE:FeedPort + FeedPath.
	FeedURL string
	// Lo is the shard's first sequence number, Hi the next shard's (0
	// for the last shard).
	Lo, Hi uint64
	// Log receives a line when the feed breaks; nil: discarded.
	Log io.Writer

	cancel context.CancelFunc
	done   chan struct{}
}

var (
	_ pipebench.Sink          = (*FeedSink)(nil)
	_ pipebench.MultiEndpoint = (*FeedSink)(nil)
)

// Start subscribes to the feed and returns once the sink answered.
func (s *FeedSink) Start(ctx context.Context, rec pipebench.Arrivals) error {
	if s.Log == nil {
		s.Log = io.Discard
	}
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	q := "?lo=" + strconv.FormatUint(s.Lo, 10)
	if s.Hi > 0 {
		q += "&hi=" + strconv.FormatUint(s.Hi, 10)
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, s.FeedURL+q, nil)
	if err != nil {
		cancel()
		return err
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		ResponseHeaderTimeout: 30 * time.Second, DisableCompression: true,
	}}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return fmt.Errorf("subscribe to the in-cluster sink's arrivals at %s: %w", s.FeedURL, err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		return fmt.Errorf("the in-cluster sink refused the arrivals feed (HTTP %d): %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	s.cancel, s.done = cancel, make(chan struct{})
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		br := bufio.NewReaderSize(resp.Body, 64<<10)
		var r [recSize]byte
		for {
			if _, err := io.ReadFull(br, r[:]); err != nil {
				if cctx.Err() == nil {
					fmt.Fprintf(s.Log, "the in-cluster sink's arrivals feed broke: %v (later arrivals count as lost)\n", err)
				}
				return
			}
			a, b, c := binary.BigEndian.Uint64(r[1:]), binary.BigEndian.Uint64(r[9:]), binary.BigEndian.Uint64(r[17:])
			switch r[0] {
			case recArrive:
				rec.Arrive(a, time.Unix(0, int64(b)), time.Unix(0, int64(c)))
			case recFaulted:
				rec.Faulted(int(a))
			case recUnmatched:
				rec.Unmatched(int(a))
			}
		}
	}()
	return nil
}

// Endpoint implements pipebench.Sink.
func (s *FeedSink) Endpoint() string { return s.Target }

// Endpoints implements pipebench.MultiEndpoint.
func (s *FeedSink) Endpoints() map[string]string { return s.Targets }

// Shutdown ends the subscription.
func (s *FeedSink) Shutdown(ctx context.Context) error {
	if s.cancel == nil {
		return nil
	}
	s.cancel()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Rehost puts host in place of the host of an endpoint, a URL
// (http://10.1.2.3:8080/path) or host:port, keeping its port.
func Rehost(endpoint, host string) (string, error) {
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil {
			return "", err
		}
		if p := u.Port(); p != "" {
			u.Host = net.JoinHostPort(host, p)
		} else {
			u.Host = host
		}
		return u.String(), nil
	}
	_, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return "", fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	return net.JoinHostPort(host, port), nil
}
