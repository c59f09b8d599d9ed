// Package effect observes the visible effects of the events pipebench sent:
// it polls an HTTP endpoint answering JSON, reads the effects listed there
// (each naming the sequence number of the event that caused it), and
// records how long each event took to take effect, how many took effect
// and when, and the backlog the system reports.
//
// Every poll yields Points:
//
//	effects                       counter: effects seen so far (its rate is the effect rate)
//	effect_latency_ms_bucket{le}  counters: the event-to-effect latencies so far, as a
//	                              cumulative histogram (20 buckets a decade, 0.1 ms to
//	                              about 3 h; only the span holding latencies is listed)
//	effect_backlog                gauge: the backlog field of the answer, when configured
//
// Each latency is one event's: from its send time to its effect's time (or,
// without one, the poll that first saw it, so within one poll interval).
// The buckets' growth over a phase gives that phase's quantiles of every
// event that took effect in it (kpi.HistogramKPIs: effect_latency_ms.p50,
// .p75, .p90, .p95, .p99), not one poll's. Summary gives the whole run's
// exact numbers, SummaryBetween a window's: latency quantiles, first and
// last effect, count.
package effect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpbody"
	"github.com/pipebench/pipebench/observer/internal/effecthist"
)

// Config configures the observer. Paths are dotted field names
// ("data.items", "status.applied_at").
type Config struct {
	// URL is the endpoint to poll. A path alone ("/effects") is taken
	// relative to the system under test's HTTP endpoint.
	URL     string             `yaml:"url" json:"url"`
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// CursorParam is the query parameter the next poll sends the cursor
	// in, and Cursor the answer's field holding it; both empty: every poll
	// reads the whole list, and effects already seen are skipped by
	// sequence number.
	CursorParam string `yaml:"cursor_param" json:"cursor_param,omitempty"`
	Cursor      string `yaml:"cursor" json:"cursor,omitempty"`
	// Items is the path of the array of effects ("" : the answer is the
	// array).
	Items string `yaml:"items" json:"items,omitempty"`
	// Seq is the field of an effect holding the event's sequence number.
	Seq string `yaml:"seq" json:"seq"`
	// Sent is the field holding the event's send time; At the effect's
	// time (empty: when the poll saw it). Times are RFC 3339 strings or
	// Unix times in seconds, milliseconds, microseconds or nanoseconds.
	Sent string `yaml:"sent" json:"sent"`
	At   string `yaml:"at" json:"at,omitempty"`
	// Backlog is the answer's field holding the backlog, if any.
	Backlog string `yaml:"backlog" json:"backlog,omitempty"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if strings.HasPrefix(c.URL, "/") {
		// relative to the SUT
	} else if u, err := url.Parse(c.URL); c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("url: %q is not an http:// URL or a path on the system under test (/effects)", c.URL))
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	if (c.CursorParam == "") != (c.Cursor == "") {
		errs = append(errs, errors.New("cursor_param: cursor_param and cursor go together"))
	}
	if c.Seq == "" {
		errs = append(errs, errors.New("seq: name the field holding each effect's sequence number"))
	}
	if c.Sent == "" {
		errs = append(errs, errors.New("sent: name the field holding each event's send time"))
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Timeout: pipebench.Duration(2 * time.Second), Seq: "seq", Sent: "sent"}
}

// Factory returns the factory of the "effect" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("effect", "poll an HTTP JSON endpoint for events' effects: event-to-effect latency, effect rate, backlog",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) {
			if strings.HasPrefix(c.URL, "/") {
				base := env.Targets["http"]
				if base == "" {
					for _, in := range env.Instances {
						if u, err := url.Parse(in.MetricsURL); err == nil && u.Host != "" {
							base = u.Scheme + "://" + u.Host
							break
						}
					}
				}
				if base == "" {
					return nil, pipebench.UsageError(fmt.Sprintf("the effect observer's url %s is a path, and there is no system under test with an HTTP endpoint", c.URL),
						"give the whole URL, like http://127.0.0.1:8080/effects", nil)
				}
				c.URL = strings.TrimSuffix(base, "/") + c.URL
			}
			return New(*c)
		})
}

// Observer polls one endpoint. Observe is called from one goroutine at a
// time; Summary may be called besides it.
type Observer struct {
	*core
	cfg    Config
	client *http.Client
	cursor string
}

// core records effects, whatever their source. Safe for concurrent use.
type core struct {
	mu      sync.Mutex
	seen    map[uint64]struct{}
	effects *effecthist.Effects
}

var _ pipebench.Observer = (*Observer)(nil)

// New returns an observer for cfg (URL must be absolute here).
func New(cfg Config) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if strings.HasPrefix(cfg.URL, "/") {
		return nil, pipebench.UsageError("the effect observer needs an absolute url", "", nil)
	}
	return &Observer{core: newCore(), cfg: cfg, client: &http.Client{Timeout: cfg.Timeout.D()}}, nil
}

func newCore() *core {
	return &core{seen: map[uint64]struct{}{}, effects: effecthist.NewEffects()}
}

// item is one effect as a source read it.
type item struct {
	seq  uint64
	sent time.Time // zero: unknown
	at   time.Time // zero: when the poll saw it
}

// Observe polls once (following the cursor while the answer is a full
// page) and returns the points of the effects it found.
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	var backlog *float64
	var err error
	for page := 0; page < 100; page++ {
		var doc any
		doc, err = o.fetch(ctx)
		if err != nil {
			break
		}
		n := o.take(doc, at)
		if o.cfg.Backlog != "" {
			if v, ok := number(lookup(doc, o.cfg.Backlog)); ok {
				backlog = &v
			}
		}
		if o.cfg.Cursor == "" || n == 0 {
			break
		}
		next := lookup(doc, o.cfg.Cursor)
		if next == nil {
			break
		}
		o.cursor = scalarString(next)
	}
	pts := o.points(at, backlog)
	if ctx.Err() != nil {
		err = nil // the run is ending: not a failed observation
	}
	return pts, err
}

// points are the Points of one poll.
func (c *core) points(at time.Time, backlog *float64) []pipebench.Point {
	c.mu.Lock()
	pts := c.effects.Points(at)
	c.mu.Unlock()
	if backlog != nil {
		pts = append(pts, pipebench.Point{Name: "effect_backlog", Kind: pipebench.KindGauge, At: at, Value: *backlog})
	}
	return pts
}

func (o *Observer) fetch(ctx context.Context) (any, error) {
	u := o.cfg.URL
	if o.cfg.CursorParam != "" && o.cursor != "" {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, err
		}
		q := pu.Query()
		q.Set(o.cfg.CursorParam, o.cursor)
		pu.RawQuery = q.Encode()
		u = pu.String()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, body, err := httpbody.Read(o.client, req, 256<<20)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d: %.80s", o.cfg.URL, resp.StatusCode, body)
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: the answer is not JSON: %w", o.cfg.URL, err)
	}
	return doc, nil
}

// take records the new effects in doc; it returns how many items the
// answer listed.
func (o *Observer) take(doc any, polled time.Time) int {
	list, _ := lookup(doc, o.cfg.Items).([]any)
	items := make([]item, 0, len(list))
	for _, it := range list {
		sv, ok := number(lookup(it, o.cfg.Seq))
		if !ok || sv < 0 {
			continue
		}
		e := item{seq: uint64(sv)}
		if o.cfg.At != "" {
			e.at, _ = timeOf(lookup(it, o.cfg.At))
		}
		e.sent, _ = timeOf(lookup(it, o.cfg.Sent))
		items = append(items, e)
	}
	o.record(items, polled)
	return len(list)
}

// record adds the effects not seen before.
func (c *core) record(items []item, polled time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range items {
		if _, dup := c.seen[e.seq]; dup {
			continue
		}
		c.seen[e.seq] = struct{}{}
		at := e.at
		if at.IsZero() {
			at = polled
		}
		c.effects.Add(at, e.sent)
	}
}

// Summary is the whole run's view of the effects.
type Summary = effecthist.Summary

// Summary returns the numbers so far.
func (c *core) Summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.effects.Summary()
}

// SummaryBetween returns the numbers of the effects that took effect in
// [start, end): a phase's own latency quantiles, count and first and last
// effect.
func (c *core) SummaryBetween(start, end time.Time) Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.effects.Between(start, end)
}

// lookup follows a dotted path through maps; "" is doc itself.
func lookup(doc any, path string) any {
	if path == "" {
		return doc
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := doc.(map[string]any)
		if !ok {
			return nil
		}
		doc = m[k]
	}
	return doc
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case string:
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case float64:
		return v, true
	}
	return 0, false
}

func scalarString(v any) string {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case string:
		return v
	}
	return fmt.Sprint(v)
}

// timeOf reads an RFC 3339 string or a Unix time whose unit is guessed
// from its size (s, ms, µs, ns).
func timeOf(v any) (time.Time, bool) {
	if s, ok := v.(string); ok {
		if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
			return t, true
		}
	}
	if n, ok := v.(json.Number); ok {
		if i, err := n.Int64(); err == nil && i >= 1e17 {
			return time.Unix(0, i), true
		}
	}
	f, ok := number(v)
	if !ok {
		return time.Time{}, false
	}
	return effecthist.UnixTime(f)
}

// Close drops the idle keep-alive connections the observer's polls left
// open (the runner calls it once, after the last Observe).
func (o *Observer) Close() error {
	o.client.CloseIdleConnections()
	return nil
}
