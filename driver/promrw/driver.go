// Package promrwdriver load-tests Prometheus remote-write receivers, 1.0
// or 2.0 (protocol: "2.0"; a
// collector's prometheusremotewrite receiver, a Prometheus with
// --web.enable-remote-write-receiver, pipebench's own sink): the avalanche
// use case with pipebench's pacing, faults and table.
//
// It takes the batches of the otlp-metrics generator (pmetric.Metrics) and
// turns every data point into one sample of its own series: __name__ is the
// metric name with every character outside [a-zA-Z0-9_:] replaced by _
// (histograms get _count), the point's attributes become labels the same
// way, and the label pipebench="seq" marks the series. As payload/promrw's
// sequence convention says, the sample's value is the item's sequence
// number and its timestamp the send time in milliseconds, so a
// remote-write sink can match every sample. The request is snappy-
// compressed protobuf with the headers of its protocol version.
//
// The metrics generator's batches (already encoded OTLP) are converted
// straight from the OTLP wire bytes to the remote-write request, without
// pdata; pmetric.Metrics batches (and OTLP whose attributes hold bytes,
// arrays or maps) go through pdata.
package promrwdriver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/s2"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/httppost"
	"github.com/pipebench/pipebench/internal/conn/netclass"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/payload/promrw"
)

// DefaultEndpoint is where Prometheus' own remote-write receiver listens.
const DefaultEndpoint = "http://127.0.0.1:9090/api/v1/write"

// Config configures the remote-write driver.
type Config struct {
	// Endpoint is the receiver's URL; empty means the runner's target
	// (Env.Targets["prometheus-remote-write"], then Env.Target), then
	// DefaultEndpoint.
	Endpoint string             `yaml:"endpoint" json:"endpoint,omitempty"`
	Timeout  pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Connections is the HTTP keep-alive pool size.
	Connections   int                         `yaml:"connections" json:"connections"`
	Headers       map[string]string           `yaml:"headers" json:"headers,omitempty"`
	SecretHeaders map[string]pipebench.Secret `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// Protocol is the remote-write version: "1.0" (prometheus.WriteRequest,
	// the default) or "2.0" (io.prometheus.write.v2.Request, with its
	// symbol table).
	Protocol string `yaml:"protocol" json:"protocol,omitempty"`
}

// DefaultConfig returns a 5 s timeout and 4 connections.
func DefaultConfig() *Config {
	return &Config{Timeout: pipebench.Duration(5 * time.Second), Connections: 4, Protocol: "1.0"}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	if c.Protocol != "" && c.Protocol != "1.0" && c.Protocol != "2.0" {
		errs = append(errs, fmt.Errorf("protocol: %q is not a remote-write version: use 1.0 or 2.0", c.Protocol))
	}
	if c.Connections < 1 || c.Connections > 10000 {
		errs = append(errs, fmt.Errorf("connections: %d is outside 1..10000", c.Connections))
	}
	if c.Endpoint != "" {
		if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("endpoint: %q is not an http:// or https:// URL (e.g. %s)", c.Endpoint, DefaultEndpoint))
		}
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "prometheus-remote-write" driver; it
// accepts otlp-metrics batches.
func Factory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("prometheus-remote-write", "Prometheus remote write 1.0 or 2.0 (snappy protobuf): every metric point a sample of its own series", DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Driver, error) {
			target := env.TargetFor("prometheus-remote-write")
			return New(*c, target)
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadOTLPMetrics})
}

// Driver sends remote-write requests. Send is safe for concurrent use.
type Driver struct {
	cfg      Config
	url      string
	hostport string
	client   *httppost.Client
	headers  http.Header
	pool     sync.Pool // *work
	v2       bool      // remote write 2.0
}

var (
	_ pipebench.Driver             = (*Driver)(nil)
	_ pipebench.ConnectionReporter = (*Driver)(nil)
)

// New builds a driver aimed at cfg.Endpoint, else target, else
// DefaultEndpoint. Connections open on demand.
func New(cfg Config, target string) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = target
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if !strings.Contains(cfg.Endpoint, "://") {
		cfg.Endpoint = "http://" + cfg.Endpoint + "/api/v1/write"
	}
	hostport, err := httppost.HostPort(cfg.Endpoint, cfg.Endpoint, "a remote-write endpoint looks like "+DefaultEndpoint)
	if err != nil {
		return nil, err
	}
	d := &Driver{cfg: cfg, url: cfg.Endpoint, hostport: hostport, headers: http.Header{}}
	for k, v := range cfg.Headers {
		d.headers.Set(k, v)
	}
	for k, v := range cfg.SecretHeaders {
		d.headers.Set(k, v.Reveal())
	}
	d.headers.Set("Content-Encoding", promrw.ContentEncoding)
	if cfg.Protocol == "2.0" {
		d.v2 = true
		d.headers.Set("Content-Type", promrw.ContentTypeV2)
		d.headers.Set(promrw.VersionHeader, promrw.VersionV2)
	} else {
		d.headers.Set("Content-Type", promrw.ContentType)
		d.headers.Set(promrw.VersionHeader, promrw.Version)
	}
	d.headers.Set("User-Agent", "pipebench")
	// Remote write's retry rules: 429 and 5xx are refused (retryable
	// backpressure), except 504, a timeout, as is 408; any other 4xx is
	// an error (dropped).
	d.client = httppost.New(httppost.Params{Conns: cfg.Connections, Timeout: cfg.Timeout.D(), Rules: netclass.RemoteWriteStatuses})
	return d, nil
}

// Endpoint is the URL the driver posts to.
func (d *Driver) Endpoint() string { return d.url }

// Start checks that something listens at the endpoint: when nothing does,
// it fails with an unreached error naming the address.
func (d *Driver) Start(ctx context.Context) error {
	c, err := netclass.Dial(ctx, d.hostport, nil, d.cfg.Timeout.D())
	if err != nil {
		if netclass.Classify(err).Unreached {
			return netclass.StartError("remote-write driver: cannot connect to "+d.hostport, err,
				"is the receiver listening there? Prometheus receives remote write on :9090/api/v1/write with --web.enable-remote-write-receiver")
		}
		return nil
	}
	c.Close()
	return nil
}

// OpenConnections implements pipebench.ConnectionReporter.
func (d *Driver) OpenConnections() int { return d.client.Open() }

// Shutdown closes idle connections.
func (d *Driver) Shutdown(context.Context) error {
	d.client.CloseIdle()
	return nil
}

// work is one sender's reusable buffers.
type work struct {
	v2     bool
	enc    promrw.Encoder
	enc2   promrw.V2Encoder
	labels []promrw.Label
	blabs  [][2][]byte
	vals   [1]float64
	ts     [1]int64
	names  map[string]string // attribute key -> label name
	bnames map[string][]byte // metric or attribute name -> label name (direct path)
	walk   otlpgen.PointWalk
	zbuf   []byte
}

func (d *Driver) work() *work {
	if w, ok := d.pool.Get().(*work); ok {
		return w
	}
	return &work{v2: d.v2, names: map[string]string{}, bnames: map[string][]byte{}}
}

// reset empties the request being built.
func (w *work) reset() {
	if w.v2 {
		w.enc2.Reset()
	} else {
		w.enc.Reset()
	}
}

// compress snappy-compresses the request built and returns it with its
// number of samples. The bytes are valid until the work goes back to the
// pool.
func (w *work) compress() ([]byte, int) {
	plain, samples := w.enc.Bytes(), w.enc.Samples()
	if w.v2 {
		plain, samples = w.enc2.Bytes(), w.enc2.Samples()
	}
	// s2's snappy-compatible fast mode: the block format every snappy
	// decoder reads, at less CPU than snappy.Encode's "better" mode.
	if n := s2.MaxEncodedLen(len(plain)); cap(w.zbuf) < n {
		w.zbuf = make([]byte, n)
	}
	w.zbuf = s2.EncodeSnappy(w.zbuf[:cap(w.zbuf)], plain)
	return w.zbuf, samples
}

// encodeWire builds the request straight from an encoded OTLP metrics
// request, point by point, as encode does from pdata.
func (w *work) encodeWire(body []byte) ([]byte, int, error) {
	w.reset()
	err := w.walk.WalkMetricPoints(body, func(p *otlpgen.MetricPoint) error {
		name := w.nameBytes(p.Name, p.Histogram)
		ls := append(w.blabs[:0], [2][]byte{nameLabel, name})
		for _, a := range p.Attrs {
			ls = append(ls, [2][]byte{w.nameBytes(a.Key, false), a.Value})
		}
		value, millis := p.Value, int64(p.TimeNanos)/1e6
		if p.HasSeq {
			value = float64(p.Seq)
			ls = append(ls, [2][]byte{seqName, seqValue})
		}
		if p.HasSent {
			millis = p.Sent / 1e6
		}
		slices.SortFunc(ls[1:], func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
		w.blabs = ls
		w.vals[0], w.ts[0] = value, millis
		if w.v2 {
			w.enc2.SeriesBytes(ls, w.vals[:], w.ts[:])
		} else {
			w.enc.SeriesBytes(ls, w.vals[:], w.ts[:])
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	b, n := w.compress()
	return b, n, nil
}

var seqName, seqValue, nameLabel = []byte(promrw.SeqLabel), []byte("seq"), []byte("__name__")

// nameBytes is label for the direct path: the Prometheus name of an OTLP
// name (with _count for a histogram's metric name), remembered.
func (w *work) nameBytes(k []byte, hist bool) []byte {
	key := string(k) // no allocation for the lookup
	if hist {
		if n, ok := w.bnames["\x00"+key]; ok {
			return n
		}
		n := []byte(w.label(key) + "_count")
		if len(w.bnames) < 10000 {
			w.bnames["\x00"+key] = n
		}
		return n
	}
	if n, ok := w.bnames[key]; ok {
		return n
	}
	n := []byte(w.label(key))
	if len(w.bnames) < 10000 {
		w.bnames[key] = n
	}
	return n
}

// encode builds the snappy-compressed remote-write request for b's
// metrics and returns it with its number of samples. The bytes are valid
// until the work goes back to the pool.
func (w *work) encode(md pmetric.Metrics) ([]byte, int) {
	w.reset()
	otlpgen.EachMetric(md, w.metric)
	return w.compress()
}

func (w *work) metric(m pmetric.Metric) {
	name := w.label(m.Name())
	switch m.Type() {
	case pmetric.MetricTypeGauge:
		dps := m.Gauge().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			w.point(name, dp.Attributes(), number(dp), dp.Timestamp())
		}
	case pmetric.MetricTypeSum:
		dps := m.Sum().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			w.point(name, dp.Attributes(), number(dp), dp.Timestamp())
		}
	case pmetric.MetricTypeHistogram:
		dps := m.Histogram().DataPoints()
		for i := 0; i < dps.Len(); i++ {
			dp := dps.At(i)
			w.point(name+"_count", dp.Attributes(), float64(dp.Count()), dp.Timestamp())
		}
	}
}

func number(dp pmetric.NumberDataPoint) float64 {
	if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
		return float64(dp.IntValue())
	}
	return dp.DoubleValue()
}

// point appends one series of one sample. With pb.seq and pb.sent the
// sample is the sequence number at the send time; otherwise the point's
// own value and timestamp.
func (w *work) point(name string, attrs pcommon.Map, value float64, ts pcommon.Timestamp) {
	ls := append(w.labels[:0], promrw.Label{Name: "__name__", Value: name})
	millis := ts.AsTime().UnixMilli()
	carrier := false
	attrs.Range(func(k string, v pcommon.Value) bool {
		switch k {
		case otlpgen.AttrSeq:
			value, carrier = float64(v.Int()), true
		case otlpgen.AttrSent:
			millis = v.Int() / 1e6
		default:
			ls = append(ls, promrw.Label{Name: w.label(k), Value: v.AsString()})
		}
		return true
	})
	if carrier {
		ls = append(ls, promrw.Label{Name: promrw.SeqLabel, Value: "seq"})
	}
	slices.SortFunc(ls[1:], func(a, b promrw.Label) int { return strings.Compare(a.Name, b.Name) })
	w.labels = ls
	w.vals[0], w.ts[0] = value, millis
	if w.v2 {
		w.enc2.Series(ls, w.vals[:], w.ts[:])
	} else {
		w.enc.Series(ls, w.vals[:], w.ts[:])
	}
}

// label turns an OTLP name into a Prometheus label or metric name,
// remembering the answer.
func (w *work) label(k string) string {
	if n, ok := w.names[k]; ok {
		return n
	}
	b := []byte(k)
	for i, c := range b {
		if !(c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')) {
			b[i] = '_'
		}
	}
	n := string(b)
	if len(w.names) < 10000 {
		w.names[k] = n
	}
	return n
}

// Send implements pipebench.Driver.
func (d *Driver) Send(ctx context.Context, b *pipebench.Batch) pipebench.Outcome {
	w := d.work()
	var body []byte
	md, ok := b.Data.(pmetric.Metrics)
	if enc, isEnc := b.Data.(*otlpgen.Encoded); isEnc && enc.Signal == otlpgen.SignalMetrics {
		// The metrics generator encodes straight to the wire: convert
		// from it, through pdata only when an attribute is not a scalar.
		var err error
		body, _, err = w.encodeWire(enc.Body)
		if errors.Is(err, otlpgen.ErrComplexValue) {
			if md, err = enc.Metrics(); err == nil {
				body, _ = w.encode(md)
			}
		}
		if err != nil {
			d.pool.Put(w)
			return pipebench.Outcome{Class: pipebench.ClassError, Detail: "bad OTLP metrics", Message: err.Error()}
		}
	} else if ok {
		body, _ = w.encode(md)
	} else {
		d.pool.Put(w)
		return pipebench.Outcome{Class: pipebench.ClassError, Detail: "not OTLP metrics",
			Message: fmt.Sprintf("the prometheus-remote-write driver got %T, not metrics: use the otlp-metrics generator", b.Data)}
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Timeout.D())
	defer cancel()
	o, released := d.client.Post(ctx, d.url, d.headers.Clone(), body)
	if released {
		// Otherwise the transport may still read the body (an early
		// answer, an error): its buffers are not reused.
		d.pool.Put(w)
	}
	return o
}
