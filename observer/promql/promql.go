// Package promql observes a Prometheus server through its HTTP API: every
// interval it evaluates each configured PromQL expression at that instant
// (/api/v1/query), and QueryRange evaluates them over a window
// (/api/v1/query_range), turning each result series into Points named by
// the scenario. This is how third parties' numbers (an API server's request
// rate and latency quantiles through histogram_quantile, a database's insert
// rate, memory, connections) become KPI columns.
package promql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httpbody"
)

// Query is one PromQL expression turned into one KPI series.
type Query struct {
	// Name is the KPI's name ("apiserver_latency.p99").
	Name string `yaml:"name" json:"name"`
	// Query is the PromQL expression.
	Query string `yaml:"query" json:"query"`
	// Kind is gauge (default: a level or a rate PromQL already computed;
	// each phase shows NAME.max and NAME.last), counter (a running total
	// pipebench turns into a rate per phase, NAME_rate) or histogram: the
	// query returns a histogram's cumulative buckets, one series per "le"
	// label (sum by (le) (x_bucket)), and each phase shows the quantiles of
	// the observations made in it, NAME.p50, .p75, .p90, .p95, .p99, from
	// the buckets' growth over the phase (what histogram_quantile of an
	// increase over the phase's duration at its end gives).
	Kind string `yaml:"kind" json:"kind,omitempty"`

	labels map[string]string // added to every point (a stage's)
}

// Config configures the observer.
type Config struct {
	// URL is the Prometheus server's base URL: http://127.0.0.1:9090.
	// Leave it out with Start.
	URL string `yaml:"url" json:"url,omitempty"`
	// Start, when set, starts a Prometheus server for the run that
	// scrapes every instance of the system under test serving metrics
	// (a job per instance, named after it) and Start.Targets; the
	// queries go to it, and it stops with the run.
	Start *StartConfig `yaml:"start" json:"start,omitempty"`
	// Timeout bounds one HTTP request; it is also sent as the query
	// timeout.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Step is the resolution of range queries (default 5s).
	Step pipebench.Duration `yaml:"step" json:"step"`
	// Headers are sent with every request (a tenant header); SecretHeaders
	// too, and are never printed (a bearer token).
	Headers       map[string]string           `yaml:"headers" json:"headers,omitempty"`
	SecretHeaders map[string]pipebench.Secret `yaml:"secret_headers" json:"secret_headers,omitempty"`
	Queries       []Query                     `yaml:"queries" json:"queries"`
	// Stages, when given, make the run's stage breakdown (Stage).
	Stages []Stage `yaml:"stages" json:"stages,omitempty"`
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:]*$`)

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	switch {
	case c.Start != nil:
		if c.URL != "" {
			errs = append(errs, errors.New("url: leave it out with start (the queries go to the Prometheus pipebench starts)"))
		}
		c.Start.defaults()
		errs = append(errs, c.Start.validate()...)
	default:
		if u, err := url.Parse(c.URL); c.URL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url: %q is not the http:// base URL of a Prometheus server (like http://127.0.0.1:9090), and start is not set", c.URL))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, errors.New("timeout: must be more than 0"))
	}
	if c.Step <= 0 {
		errs = append(errs, errors.New("step: must be more than 0"))
	}
	if len(c.Queries) == 0 && len(c.Stages) == 0 {
		errs = append(errs, errors.New(`queries: give at least one {name, query}, like {name: request_rate, query: "sum(rate(http_requests_total[1m]))"}`))
	}
	errs = append(errs, validateStages(c.Stages)...)
	seen := map[string]bool{}
	for i, q := range c.Queries {
		switch {
		case !nameRE.MatchString(q.Name):
			errs = append(errs, fmt.Errorf("queries: entry %d: name %q must be letters, digits, _ . or : and not start with a digit", i, q.Name))
		case seen[q.Name]:
			errs = append(errs, fmt.Errorf("queries: entry %d: name %q is used twice", i, q.Name))
		}
		seen[q.Name] = true
		if strings.TrimSpace(q.Query) == "" {
			errs = append(errs, fmt.Errorf("queries: entry %d (%s): query is empty", i, q.Name))
		}
		if q.Kind != "" && q.Kind != "gauge" && q.Kind != "counter" && q.Kind != "histogram" {
			errs = append(errs, fmt.Errorf("queries: entry %d (%s): kind %q is not gauge, counter or histogram", i, q.Name, q.Kind))
		}
		if q.Kind == "histogram" && strings.Contains(q.Query, "histogram_quantile") {
			errs = append(errs, fmt.Errorf("queries: entry %d (%s): a histogram query returns the buckets, like sum by (le) (x_bucket); pipebench computes the quantiles per phase", i, q.Name))
		}
	}
	return errors.Join(errs...)
}

func defaultConfig() *Config {
	return &Config{Timeout: pipebench.Duration(5 * time.Second), Step: pipebench.Duration(5 * time.Second)}
}

// Factory returns the factory of the "promql" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("promql", "PromQL expressions against a Prometheus server's HTTP API (a running one, or one started for the run scraping the system under test), one KPI series each",
		defaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) {
			if c.Start == nil {
				return New(*c)
			}
			ctx, cancel := context.WithTimeout(context.Background(), c.Start.StartTimeout.D()+5*time.Second)
			defer cancel()
			srv, err := startServer(ctx, *c.Start, env.Instances, env.Dir)
			if err != nil {
				return nil, err
			}
			cfg := *c
			cfg.URL, cfg.Start = srv.url, nil
			o, err := New(cfg)
			if err != nil {
				srv.stop()
				return nil, err
			}
			o.server = srv
			return o, nil
		})
}

// Observer queries one Prometheus server. Observe is called from one
// goroutine at a time; QueryRange is safe to call besides it.
type Observer struct {
	server  *server // the Prometheus it started, if any
	cfg     Config
	base    string
	client  *http.Client
	headers http.Header
}

var _ pipebench.Observer = (*Observer)(nil)

// New returns an observer for cfg.
func New(cfg Config) (*Observer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Queries = append(append([]Query(nil), cfg.Queries...), stageQueries(cfg.Stages)...)
	o := &Observer{cfg: cfg, base: strings.TrimSuffix(cfg.URL, "/"), client: &http.Client{Timeout: cfg.Timeout.D()}, headers: http.Header{}}
	for k, v := range cfg.Headers {
		o.headers.Set(k, v)
	}
	for k, v := range cfg.SecretHeaders {
		o.headers.Set(k, v.Reveal())
	}
	return o, nil
}

// Observe evaluates every query at instant at. A query that fails is named
// in the error; the others still give their points. Series whose value is
// NaN or infinite (a quantile of no observations) are left out.
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	for _, q := range o.cfg.Queries {
		v := url.Values{"query": {q.Query}, "time": {formatTime(at)}, "timeout": {o.cfg.Timeout.D().String()}}
		res, err := o.get(ctx, "/api/v1/query", v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.Name, err))
			continue
		}
		pts = append(pts, toPoints(q, res)...)
	}
	if ctx.Err() != nil {
		return pts, nil // the run is ending: not a failed observation
	}
	return pts, errors.Join(errs...)
}

// QueryRange evaluates every query over [start, end] at the configured
// step, for the whole run window or one phase. Points carry the times
// Prometheus evaluated them at.
func (o *Observer) QueryRange(ctx context.Context, start, end time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	for _, q := range o.cfg.Queries {
		v := url.Values{"query": {q.Query}, "start": {formatTime(start)}, "end": {formatTime(end)},
			"step": {strconv.FormatFloat(o.cfg.Step.D().Seconds(), 'f', -1, 64)}, "timeout": {o.cfg.Timeout.D().String()}}
		res, err := o.get(ctx, "/api/v1/query_range", v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", q.Name, err))
			continue
		}
		pts = append(pts, toPoints(q, res)...)
	}
	return pts, errors.Join(errs...)
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}

// apiResponse is the envelope of the Prometheus HTTP API.
type apiResponse struct {
	Status    string    `json:"status"`
	Data      queryData `json:"data"`
	ErrorType string    `json:"errorType"`
	Error     string    `json:"error"`
	Warnings  []string  `json:"warnings"`
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

// sample is [unix seconds, "value"].
type sample [2]any

type series struct {
	Metric map[string]string `json:"metric"`
	Value  *sample           `json:"value"`
	Values []sample          `json:"values"`
}

func (o *Observer) get(ctx context.Context, path string, v url.Values) (*queryData, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.base+path, strings.NewReader(v.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, vs := range o.headers {
		req.Header[k] = vs
	}
	resp, body, err := httpbody.Read(o.client, req, 64<<20)
	if err != nil {
		return nil, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("HTTP %d, not a Prometheus API answer: %.80s", resp.StatusCode, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return &r.Data, nil
}

// toPoints turns a result into points named q.Name, labelled by the
// series' labels (without __name__).
func toPoints(q Query, d *queryData) []pipebench.Point {
	kind, name := pipebench.KindGauge, q.Name
	switch q.Kind {
	case "counter":
		kind = pipebench.KindCounter
	case "histogram":
		// Cumulative bucket counters: kpi.HistogramKPIs reads them.
		kind, name = pipebench.KindCounter, q.Name+"_bucket"
	}
	point := func(labels map[string]string, s sample) (pipebench.Point, bool) {
		ts, ok := s[0].(float64)
		str, ok2 := s[1].(string)
		if !ok || !ok2 {
			return pipebench.Point{}, false
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || (q.Kind == "histogram" && labels["le"] == "") {
			return pipebench.Point{}, false
		}
		sec, frac := math.Modf(ts)
		return pipebench.Point{Name: name, Labels: labels, Kind: kind, At: time.Unix(int64(sec), int64(frac*1e9)), Value: v}, true
	}
	var out []pipebench.Point
	switch d.ResultType {
	case "scalar":
		var s sample
		if json.Unmarshal(d.Result, &s) == nil {
			if p, ok := point(nil, s); ok {
				out = append(out, p)
			}
		}
	case "vector", "matrix":
		var ss []series
		if json.Unmarshal(d.Result, &ss) != nil {
			return nil
		}
		sort.Slice(ss, func(i, j int) bool { return labelKey(ss[i].Metric) < labelKey(ss[j].Metric) })
		for _, s := range ss {
			labels := map[string]string{}
			for k, v := range s.Metric {
				if k != "__name__" {
					labels[k] = v
				}
			}
			for k, v := range q.labels {
				labels[k] = v
			}
			if len(labels) == 0 {
				labels = nil
			}
			if s.Value != nil {
				if p, ok := point(labels, *s.Value); ok {
					out = append(out, p)
				}
			}
			for _, v := range s.Values {
				if p, ok := point(labels, v); ok {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

func labelKey(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b.WriteString(k + "=" + m[k] + ",")
	}
	return b.String()
}

// Close drops the idle keep-alive connections the observer's polls left
// open and stops the Prometheus it started (the runner calls it once,
// after the last Observe).
func (o *Observer) Close() error {
	o.client.CloseIdleConnections()
	return o.server.stop()
}

// URL is the Prometheus server's base URL (the one it started, with
// start).
func (o *Observer) URL() string { return o.base }
