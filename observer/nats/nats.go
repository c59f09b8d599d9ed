// Package natsobs observes nats-server's monitoring endpoint: /varz for
// memory, CPU and connections, /jsz for every stream's messages and bytes
// against its limits and every consumer's backlog, /connz for the client
// connections open.
package natsobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Config configures the observer.
type Config struct {
	// URL is a monitoring base URL ("http://127.0.0.1:8222"), several
	// separated by commas; empty observes every node of the embedded
	// jetstream SUT, labelled instance=NODE.
	URL     string             `yaml:"url" json:"url,omitempty"`
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	for _, u := range splitURLs(c.URL) {
		if p, err := url.Parse(u); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("url: %q is not an http:// monitoring URL", u))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, strings.TrimSuffix(u, "/"))
		}
	}
	return out
}

// Factory returns the factory of the "nats" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("nats",
		"nats-server monitoring (/varz, /jsz, /connz): stream bytes and storage against limits, consumer backlog, memory, CPU, connections",
		func() *Config { return &Config{Timeout: pipebench.Duration(2 * time.Second)} },
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) { return New(*c, env.Instances) })
}

type target struct {
	instance string
	base     string
}

// Observer polls its targets. Observe is called from one goroutine at a
// time.
type Observer struct {
	targets []target
	client  *http.Client
}

var _ pipebench.Observer = (*Observer)(nil)

// New returns an observer of cfg.URL, or of every instance's monitoring
// URL when cfg.URL is empty.
func New(cfg Config, instances []pipebench.Instance) (*Observer, error) {
	o := &Observer{client: &http.Client{Timeout: cfg.Timeout.D()}}
	for _, u := range splitURLs(cfg.URL) {
		p, _ := url.Parse(u)
		o.targets = append(o.targets, target{instance: p.Host, base: u})
	}
	if len(o.targets) == 0 {
		for _, in := range instances {
			if in.MetricsURL != "" {
				o.targets = append(o.targets, target{instance: in.Name, base: strings.TrimSuffix(in.MetricsURL, "/")})
			}
		}
	}
	if len(o.targets) == 0 {
		return nil, pipebench.UsageError("the nats observer has nothing to observe", "set its url (http://HOST:8222), or use it with sut: {type: jetstream}", nil)
	}
	return o, nil
}

// The parts of nats-server's monitoring answers the observer reads.
type varz struct {
	Mem         int64   `json:"mem"`
	CPU         float64 `json:"cpu"`
	Connections int     `json:"connections"`
	InMsgs      int64   `json:"in_msgs"`
	OutMsgs     int64   `json:"out_msgs"`
	SlowCons    int64   `json:"slow_consumers"`
}

type connz struct {
	NumConns int `json:"total"` // num_connections counts only the page asked for
}

type jsz struct {
	Storage uint64 `json:"storage"`
	Memory  uint64 `json:"memory"`
	Config  struct {
		MaxStorage int64 `json:"max_storage"`
		MaxMemory  int64 `json:"max_memory"`
	} `json:"config"`
	Accounts []struct {
		Streams []struct {
			Name   string `json:"name"`
			Config *struct {
				MaxBytes int64  `json:"max_bytes"`
				MaxMsgs  int64  `json:"max_msgs"`
				Storage  string `json:"storage"`
			} `json:"config"`
			State struct {
				Msgs     uint64 `json:"messages"`
				Bytes    uint64 `json:"bytes"`
				FirstSeq uint64 `json:"first_seq"`
				LastSeq  uint64 `json:"last_seq"`
			} `json:"state"`
			Consumers []struct {
				Name          string `json:"name"`
				NumAckPending int    `json:"num_ack_pending"`
				NumRedeliv    int    `json:"num_redelivered"`
				NumPending    uint64 `json:"num_pending"`
				Paused        bool   `json:"paused"`
				Delivered     struct {
					Stream uint64 `json:"stream_seq"`
				} `json:"delivered"`
				AckFloor struct {
					Stream uint64 `json:"stream_seq"`
				} `json:"ack_floor"`
			} `json:"consumer_detail"`
		} `json:"stream_detail"`
	} `json:"account_details"`
}

// Observe polls every target and returns its points:
//
//	memory_mb, cpu_cores, connections                      per node
//	js_storage_bytes, node_storage_used_ratio              per node
//	stream_messages, stream_bytes, stream_last_seq,
//	storage_used_ratio, storage_used_bytes,
//	storage_limit_bytes                                    per node and stream
//	consumer_pending, ack_pending, redelivered (awaiting ack),
//	consumer_acked_seq, consumer_paused                    per node, stream and consumer
//
// storage_used_ratio is the stream's bytes over its max_bytes, or over the
// node's storage limit when the stream has none.
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	var errs []error
	for _, t := range o.targets {
		p, err := o.observe(ctx, t, at)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", t.base, err))
		}
		pts = append(pts, p...)
	}
	return pts, errors.Join(errs...)
}

func (o *Observer) observe(ctx context.Context, t target, at time.Time) ([]pipebench.Point, error) {
	var pts []pipebench.Point
	add := func(name string, kind pipebench.MetricKind, v float64, kv ...string) {
		l := map[string]string{"instance": t.instance}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		pts = append(pts, pipebench.Point{Name: name, Labels: l, Kind: kind, At: at, Value: v})
	}
	var v varz
	if err := o.get(ctx, t.base+"/varz", &v); err != nil {
		return nil, err
	}
	add("memory_mb", pipebench.KindGauge, float64(v.Mem)/(1<<20))
	add("cpu_cores", pipebench.KindGauge, v.CPU/100)
	var c connz
	if err := o.get(ctx, t.base+"/connz?limit=1", &c); err != nil {
		return pts, err
	}
	add("connections", pipebench.KindGauge, float64(c.NumConns))
	add("slow_consumers", pipebench.KindCounter, float64(v.SlowCons))
	var j jsz
	if err := o.get(ctx, t.base+"/jsz?streams=true&consumers=true&config=true", &j); err != nil {
		return pts, err
	}
	add("js_storage_bytes", pipebench.KindGauge, float64(j.Storage))
	if j.Config.MaxStorage > 0 {
		add("node_storage_used_ratio", pipebench.KindGauge, float64(j.Storage)/float64(j.Config.MaxStorage))
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			add("stream_messages", pipebench.KindGauge, float64(s.State.Msgs), "stream", s.Name)
			add("stream_bytes", pipebench.KindGauge, float64(s.State.Bytes), "stream", s.Name)
			add("stream_last_seq", pipebench.KindCounter, float64(s.State.LastSeq), "stream", s.Name)
			limit := j.Config.MaxStorage
			if s.Config != nil && s.Config.Storage == "memory" {
				limit = j.Config.MaxMemory
			}
			if s.Config != nil && s.Config.MaxBytes > 0 {
				limit = s.Config.MaxBytes
			}
			if limit > 0 {
				add("storage_used_ratio", pipebench.KindGauge, float64(s.State.Bytes)/float64(limit), "stream", s.Name)
				// The storage_fill and storage_full detectors read
				// these two.
				add("storage_used_bytes", pipebench.KindGauge, float64(s.State.Bytes), "stream", s.Name)
				add("storage_limit_bytes", pipebench.KindGauge, float64(limit), "stream", s.Name)
			}
			for _, cs := range s.Consumers {
				kv := []string{"stream", s.Name, "consumer", cs.Name}
				add("consumer_pending", pipebench.KindGauge, float64(cs.NumPending), kv...)
				add("ack_pending", pipebench.KindGauge, float64(cs.NumAckPending), kv...)
				// num_redelivered is the messages redelivered and
				// not yet acked: a level, not a total.
				add("redelivered", pipebench.KindGauge, float64(cs.NumRedeliv), kv...)
				add("consumer_acked_seq", pipebench.KindCounter, float64(cs.AckFloor.Stream), kv...)
				paused := 0.0
				if cs.Paused {
					paused = 1
				}
				add("consumer_paused", pipebench.KindGauge, paused, kv...)
			}
		}
	}
	return pts, nil
}

func (o *Observer) get(ctx context.Context, u string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into)
}

// Close drops the idle keep-alive connections the observer's polls left
// open (the runner calls it once, after the last Observe).
func (o *Observer) Close() error {
	o.client.CloseIdleConnections()
	return nil
}
