package promtarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/payload/promrw"
)

// ItemMetric is the name of the tracer samples: item k of a scrape is
//
//	pb_item{pipebench="seq",slot="k"} SEQ SENT_MILLIS
//
// (value: the sequence number; explicit timestamp: the send time), the
// remote-write sink's convention; an embedded collector agent copies them
// into the attributes pb.seq and pb.sent that the OTLP sink matches.
const ItemMetric = "pb_item"

// DriverConfig configures the "prometheus-producers" driver: the producers
// it serves, and how many tracer items may wait for a scrape.
type DriverConfig struct {
	Config `yaml:",inline" json:",inline"`
	// MaxPending bounds the tracer items waiting for a scrape, over all
	// producers; past it, Send answers refused.
	MaxPending int `yaml:"max_pending" json:"max_pending"`
}

// DefaultDriverConfig is the reference's 20 producers x 1,000 metrics x 10
// series, served where the system under test scrapes.
func DefaultDriverConfig() *DriverConfig {
	c := DefaultConfig()
	c.Listen = ""
	return &DriverConfig{Config: *c, MaxPending: 1000000}
}

// Validate reports every problem, each prefixed with its key.
func (c *DriverConfig) Validate() error {
	inner := c.Config
	if inner.Listen == "" {
		inner.Listen = "127.0.0.1:0" // the runner's target, checked when the driver is made
	}
	var errs []error
	if err := inner.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxPending < 1 || c.MaxPending > 100000000 {
		errs = append(errs, fmt.Errorf("max_pending: %d is outside 1..100000000", c.MaxPending))
	}
	return errors.Join(errs...)
}

// DriverFactory returns the factory of the "prometheus-producers" driver:
// passive producers for a scraping metric agent (the reference's avalanche
// pods), served on the system under test's endpoint (a host:port: the
// embedded collector agent's, which discovers them at /targets), with
// every batch's items served to the next scrape of one producer (in turn)
// as tracer samples, so the sink counts them delivered, lost or
// duplicated and times them end to end, scrape wait included.
func DriverFactory() pipebench.Factory[pipebench.Driver] {
	return pipebench.NewFactory("prometheus-producers", "passive Prometheus producers (N x metrics x series) for a scraping agent, each batch's items served to a producer's next scrape as tracer samples", DefaultDriverConfig,
		func(c *DriverConfig, env pipebench.Env) (pipebench.Driver, error) {
			cfg := c.Config
			if cfg.Listen == "" {
				cfg.Listen = env.TargetFor("producers")
			}
			if cfg.Listen == "" {
				cfg.Listen = "127.0.0.1:0"
			}
			if _, _, err := net.SplitHostPort(cfg.Listen); err != nil {
				return nil, pipebench.UsageError(fmt.Sprintf("prometheus-producers driver: %q is not host:port", cfg.Listen),
					"use it with sut: {type: otelcol, receiver: prometheus}, or give listen: 127.0.0.1:PORT and point your agent at /targets there", nil)
			}
			t, err := New(cfg)
			if err != nil {
				return nil, err
			}
			return &Driver{t: t, maxPending: int64(c.MaxPending)}, nil
		}).WithPayloads(nil, []pipebench.Payload{pipebench.PayloadBytes, pipebench.PayloadOTLPMetrics, pipebench.PayloadOTLPTraces, pipebench.PayloadOTLPLogs, pipebench.PayloadLogLines})
}

// Driver serves the producers and hands each batch's items to a producer's
// next scrape. Send is safe for concurrent use.
type Driver struct {
	t          *Target
	maxPending int64
	pending    atomic.Int64 // items waiting, over all producers
	next       atomic.Uint64
}

var _ pipebench.Driver = (*Driver)(nil)

// Target is the producers the driver serves.
func (d *Driver) Target() *Target { return d.t }

// Start serves the producers.
func (d *Driver) Start(ctx context.Context) error {
	if err := d.t.Start(ctx); err != nil {
		return pipebench.UsageError(err.Error(), "choose a free address with listen", err)
	}
	for _, p := range d.t.producers {
		p.onTake = func(n int) { d.pending.Add(-int64(n)) }
	}
	return nil
}

// Send implements pipebench.Driver: the batch's items wait for the next
// scrape of one producer (each batch the next producer in turn). It is
// refused when max_pending items already wait.
func (d *Driver) Send(_ context.Context, b *pipebench.Batch) pipebench.Outcome {
	if n := d.pending.Add(int64(b.Count)); n > d.maxPending {
		d.pending.Add(-int64(b.Count))
		return pipebench.Outcome{Class: pipebench.ClassRefused, Detail: "nobody scrapes",
			Message: fmt.Sprintf("%d items wait for a scrape (max_pending %d): is the agent scraping %s?", n-int64(b.Count), d.maxPending, d.t.SDURL())}
	}
	now := time.Now().UnixMilli()
	p := d.t.producers[int(d.next.Add(1)-1)%len(d.t.producers)]
	p.pmu.Lock()
	for i := 0; i < b.Count; i++ {
		p.pending = append(p.pending, item{seq: b.Seq + uint64(i), sent: now})
	}
	p.pmu.Unlock()
	return pipebench.Outcome{Class: pipebench.ClassOK}
}

// Shutdown stops serving.
func (d *Driver) Shutdown(ctx context.Context) error { return d.t.Shutdown(ctx) }

var _ pipebench.LedgerReporter = (*Driver)(nil)

// Ledger implements pipebench.LedgerReporter: the tracer items waiting
// for a producer's next scrape are unread at the source (the agent has
// not scraped them yet).
func (d *Driver) Ledger(_ context.Context, at time.Time, _ bool) ([]pipebench.Point, error) {
	return []pipebench.Point{{Name: pipebench.LedgerUnread, Labels: map[string]string{"where": "producers (items waiting for a scrape)"},
		Kind: pipebench.KindGauge, At: at, Value: float64(d.pending.Load())}}, nil
}

// take returns and forgets the tracer items waiting for this producer.
func (p *producer) take() []item {
	p.pmu.Lock()
	items := p.pending
	p.pending = nil
	p.pmu.Unlock()
	if len(items) > 0 && p.onTake != nil {
		p.onTake(len(items))
	}
	return items
}

// appendItems adds the tracer samples to a rendered exposition: in the
// text format with millisecond timestamps, in OpenMetrics (before its
// "# EOF") with timestamps in seconds.
func appendItems(body []byte, items []item, om bool) []byte {
	var eof []byte
	if om {
		const marker = "# EOF\n"
		if n := len(body) - len(marker); n >= 0 && string(body[n:]) == marker {
			body, eof = body[:n], []byte(marker)
		}
	}
	body = append(body, "# TYPE "+ItemMetric+" gauge\n"...)
	for k, it := range items {
		body = append(body, ItemMetric+`{`+promrw.SeqLabel+`="seq",slot="`...)
		body = strconv.AppendInt(body, int64(k), 10)
		body = append(body, `"} `...)
		body = strconv.AppendUint(body, it.seq, 10)
		body = append(body, ' ')
		if om {
			body = strconv.AppendInt(body, it.sent/1000, 10)
			body = append(body, '.')
			ms := it.sent % 1000
			body = append(body, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
		} else {
			body = strconv.AppendInt(body, it.sent, 10)
		}
		body = append(body, '\n')
	}
	return append(body, eof...)
}

// itemFamily is the tracer samples as a metric family, for the expfmt
// encoder.
func itemFamily(items []item) *dto.MetricFamily {
	f := &dto.MetricFamily{Name: proto.String(ItemMetric), Type: dto.MetricType_GAUGE.Enum()}
	for k, it := range items {
		f.Metric = append(f.Metric, &dto.Metric{
			Label:       []*dto.LabelPair{{Name: proto.String(promrw.SeqLabel), Value: proto.String("seq")}, {Name: proto.String("slot"), Value: proto.String(strconv.Itoa(k))}},
			Gauge:       &dto.Gauge{Value: proto.Float64(float64(it.seq))},
			TimestampMs: proto.Int64(it.sent),
		})
	}
	return f
}
