// Package natsobs observes nats-server's monitoring endpoints: /varz for
// memory, CPU, the server's version and start time (a restart), /jsz for
// each node's storage against its limit, every stream's messages and bytes
// against its limits and every consumer's backlog, /connz for the client
// connections open. The nodes of a cluster are polled at once, and each
// stream and consumer is reported by its leader.
package natsobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
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
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) { return New(*c, env.Instances) }).
		WithDetector(Detector{})
}

type target struct {
	instance string
	base     string
	// fromSUT is a target found among the system under test's instances:
	// one that is no nats-server (answers /varz with a 4xx) is dropped.
	fromSUT bool
}

// Observer polls its targets, all at once. Observe is called from one
// goroutine at a time.
type Observer struct {
	mu      sync.Mutex
	targets []target
	client  *http.Client
}

var _ pipebench.Observer = (*Observer)(nil)

// New returns an observer of cfg.URL, or of every instance's monitoring
// URL when cfg.URL is empty (instances that turn out not to be
// nats-servers, such as an event proxy in front of them, are dropped at
// their first observation).
func New(cfg Config, instances []pipebench.Instance) (*Observer, error) {
	o := &Observer{client: &http.Client{Timeout: cfg.Timeout.D()}}
	for _, u := range splitURLs(cfg.URL) {
		p, _ := url.Parse(u)
		o.targets = append(o.targets, target{instance: p.Host, base: u})
	}
	if len(o.targets) == 0 {
		for _, in := range instances {
			if in.MetricsURL != "" {
				o.targets = append(o.targets, target{instance: in.Name, base: strings.TrimSuffix(in.MetricsURL, "/"), fromSUT: true})
			}
		}
	}
	if len(o.targets) == 0 {
		return nil, pipebench.UsageError("the nats observer has nothing to observe", "set its url (http://HOST:8222), or use it with sut: {type: jetstream} or {type: eventproxy}", nil)
	}
	return o, nil
}

// The parts of nats-server's monitoring answers the observer reads.
type varz struct {
	ServerName  string    `json:"server_name"`
	Version     string    `json:"version"`
	Start       time.Time `json:"start"`
	Mem         int64     `json:"mem"`
	CPU         float64   `json:"cpu"`
	Connections int       `json:"connections"`
	InMsgs      int64     `json:"in_msgs"`
	OutMsgs     int64     `json:"out_msgs"`
	SlowCons    int64     `json:"slow_consumers"`
}

type connz struct {
	NumConns int `json:"total"` // num_connections counts only the page asked for
}

// clusterInfo says which node leads a stream or consumer; Name is the
// cluster's name, empty on a server that is not clustered.
type clusterInfo struct {
	Name   string `json:"name"`
	Leader string `json:"leader"`
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
			Name    string       `json:"name"`
			Cluster *clusterInfo `json:"cluster"`
			Config  *struct {
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
				Name          string       `json:"name"`
				Cluster       *clusterInfo `json:"cluster"`
				NumAckPending int          `json:"num_ack_pending"`
				NumRedeliv    int          `json:"num_redelivered"`
				NumPending    uint64       `json:"num_pending"`
				Paused        bool         `json:"paused"`
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

// Observe polls every target at once and returns their points:
//
//	memory_mb, cpu_cores, connections, slow_consumers,
//	server_start_time (unix seconds: a change is a restart),
//	nats_server_info{version} (1)                          per node
//	js_storage_bytes, node_storage_limit_bytes,
//	node_storage_used_ratio                                per node
//	stream_messages, stream_bytes, stream_last_seq,
//	stream_max_msgs (the cap, when set)                    per stream
//	storage_used_ratio, storage_used_bytes,
//	storage_limit_bytes (against the stream's max_bytes)   per stream with one
//	consumer_pending, ack_pending, redelivered (awaiting ack),
//	consumer_acked_seq, consumer_paused                    per stream and consumer
//
// A stream or consumer is reported once, by the node that leads it: on a
// cluster its points carry the labels stream (and consumer) only, so that
// its series go on when the leader moves; on a single server also the
// instance, as every point does.
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	o.mu.Lock()
	targets := slices.Clone(o.targets)
	o.mu.Unlock()
	pts := make([][]pipebench.Point, len(targets))
	errs := make([]error, len(targets))
	notNATS := make([]bool, len(targets))
	views := make([]jsView, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pts[i], views[i], errs[i] = o.observe(ctx, t, at)
			var he *httpError
			if errs[i] != nil && t.fromSUT && errors.As(errs[i], &he) && he.code >= 400 && he.code < 500 && he.path == "/varz" {
				notNATS[i], errs[i] = true, nil
			}
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", t.base, errs[i])
			}
		}()
	}
	wg.Wait()
	var out []pipebench.Point
	seen := map[string]bool{}
	var keep []target
	for i := range targets {
		if !notNATS[i] {
			keep = append(keep, targets[i])
		}
		for _, p := range pts[i] {
			// A leader that moved between two nodes' answers reports
			// once.
			if k := pipebench.KeyOf(p.Name, p.Labels); !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
		}
	}
	if len(keep) < len(targets) {
		o.mu.Lock()
		o.targets = keep
		o.mu.Unlock()
	}
	var failed []string
	var answered []jsView
	for i := range targets {
		switch {
		case notNATS[i]:
		case errs[i] != nil || !views[i].read:
			failed = append(failed, fmt.Sprintf("%s did not answer (%v)", targets[i].instance, errs[i]))
		default:
			answered = append(answered, views[i])
		}
	}
	out = append(out, ledger(answered, failed, at)...)
	return out, errors.Join(errs...)
}

// jsView is what one node's /jsz said about the streams and consumers:
// those it saw, those it leads (or reports as a server that is not
// clustered), and the messages each consumer it leads has not delivered
// or has not had acknowledged.
type jsView struct {
	read      bool // /jsz answered
	node      string
	streams   map[string]bool    // seen; true when this node leads it
	consumers map[string]bool    // "STREAM/CONSUMER" seen; true when led
	held      map[string]float64 // "STREAM/CONSUMER" led: num_pending + num_ack_pending
	leaders   map[string]string  // what this node says leads each stream and consumer
}

// ledger reports, per stream, what its consumers hold for their readers:
// each consumer's num_pending (not yet delivered) and num_ack_pending
// (delivered, not yet acknowledged), read from the node that leads the
// consumer (another node's copy of it may be behind). A consumer that no
// node answering leads (a stream that lost its leader, a node down) makes
// the term unknown, saying what each node said.
func ledger(views []jsView, failed []string, at time.Time) []pipebench.Point {
	seen, led := map[string]bool{}, map[string]bool{}
	streams := map[string]bool{}
	held := map[string]float64{}
	for _, v := range views {
		for c, l := range v.consumers {
			seen[c] = true
			led[c] = led[c] || l
		}
		for s := range v.streams {
			streams[s] = true
		}
		for c, h := range v.held {
			stream, _, _ := strings.Cut(c, "/")
			held[stream] += h
		}
	}
	var pts []pipebench.Point
	names := make([]string, 0, len(streams))
	for s := range streams {
		names = append(names, s)
	}
	slices.Sort(names)
	for _, s := range names {
		var why []string
		for c := range seen {
			if st, _, _ := strings.Cut(c, "/"); st != s || led[c] {
				continue
			}
			var said []string
			for _, v := range views {
				said = append(said, fmt.Sprintf("%s says %q", v.node, v.leaders[c]))
			}
			slices.Sort(said)
			why = append(why, fmt.Sprintf("no node leads consumer %s (%s)", c, strings.Join(said, ", ")))
		}
		slices.Sort(why)
		if len(why) > 0 && len(failed) > 0 {
			why = append(why, failed...)
		}
		if len(why) > 0 {
			pts = append(pts, pipebench.Point{Name: pipebench.LedgerUnknown, Labels: map[string]string{"term": "held", "where": "stream " + s, "because": strings.Join(why, "; ")}, Kind: pipebench.KindGauge, At: at, Value: 1})
			continue
		}
		pts = append(pts, pipebench.Point{Name: pipebench.LedgerHeld, Labels: map[string]string{"where": "stream " + s}, Kind: pipebench.KindGauge, At: at, Value: held[s]})
	}
	if len(views) == 0 && len(failed) > 0 {
		pts = append(pts, pipebench.Point{Name: pipebench.LedgerUnknown, Labels: map[string]string{"term": "held", "because": "no NATS node answered: " + strings.Join(failed, "; ")}, Kind: pipebench.KindGauge, At: at, Value: 1})
	}
	return pts
}

func (o *Observer) observe(ctx context.Context, t target, at time.Time) ([]pipebench.Point, jsView, error) {
	var pts []pipebench.Point
	view := jsView{node: t.instance, streams: map[string]bool{}, consumers: map[string]bool{}, held: map[string]float64{}, leaders: map[string]string{}}
	point := func(name string, kind pipebench.MetricKind, v float64, l map[string]string) {
		pts = append(pts, pipebench.Point{Name: name, Labels: l, Kind: kind, At: at, Value: v})
	}
	labels := func(instance bool, kv ...string) map[string]string {
		l := map[string]string{}
		if instance {
			l["instance"] = t.instance
		}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return l
	}
	add := func(name string, kind pipebench.MetricKind, v float64, kv ...string) {
		point(name, kind, v, labels(true, kv...))
	}
	var v varz
	if err := o.get(ctx, t.base, "/varz", &v); err != nil {
		return nil, view, err
	}
	add("memory_mb", pipebench.KindGauge, float64(v.Mem)/(1<<20))
	add("cpu_cores", pipebench.KindGauge, v.CPU/100)
	if !v.Start.IsZero() {
		add("server_start_time", pipebench.KindGauge, float64(v.Start.UnixMilli())/1000)
	}
	if v.Version != "" {
		add("nats_server_info", pipebench.KindGauge, 1, "version", v.Version)
	}
	var c connz
	if err := o.get(ctx, t.base, "/connz?limit=1", &c); err != nil {
		return pts, view, err
	}
	add("connections", pipebench.KindGauge, float64(c.NumConns))
	add("slow_consumers", pipebench.KindCounter, float64(v.SlowCons))
	var j jsz
	if err := o.get(ctx, t.base, "/jsz?streams=true&consumers=true&config=true", &j); err != nil {
		return pts, view, err
	}
	view.read = true
	if v.ServerName != "" {
		view.node = v.ServerName
	}
	add("js_storage_bytes", pipebench.KindGauge, float64(j.Storage))
	if j.Config.MaxStorage > 0 {
		add("node_storage_limit_bytes", pipebench.KindGauge, float64(j.Config.MaxStorage))
		add("node_storage_used_ratio", pipebench.KindGauge, float64(j.Storage)/float64(j.Config.MaxStorage))
	}
	// leads says whether this node reports a stream or consumer (its
	// leader, or a server that is not clustered), and whether its points
	// carry the instance.
	leads := func(ci *clusterInfo) (report, instance bool) {
		if ci == nil || ci.Name == "" {
			return true, true
		}
		return ci.Leader != "" && ci.Leader == v.ServerName, false
	}
	leader := func(ci *clusterInfo) string {
		if ci == nil {
			return ""
		}
		return ci.Leader
	}
	for _, a := range j.Accounts {
		for _, s := range a.Streams {
			report, inst := leads(s.Cluster)
			view.streams[s.Name] = view.streams[s.Name] || report
			view.leaders[s.Name] = leader(s.Cluster)
			if report {
				sl := func() map[string]string { return labels(inst, "stream", s.Name) }
				point("stream_messages", pipebench.KindGauge, float64(s.State.Msgs), sl())
				point("stream_bytes", pipebench.KindGauge, float64(s.State.Bytes), sl())
				point("stream_last_seq", pipebench.KindCounter, float64(s.State.LastSeq), sl())
				if s.Config != nil && s.Config.MaxMsgs > 0 {
					point("stream_max_msgs", pipebench.KindGauge, float64(s.Config.MaxMsgs), sl())
				}
				if s.Config != nil && s.Config.MaxBytes > 0 {
					// The stream's own limit (a node's is
					// node_storage_*): the storage_fill and
					// storage_full detectors read these.
					limit := float64(s.Config.MaxBytes)
					point("storage_used_ratio", pipebench.KindGauge, float64(s.State.Bytes)/limit, sl())
					point("storage_used_bytes", pipebench.KindGauge, float64(s.State.Bytes), sl())
					point("storage_limit_bytes", pipebench.KindGauge, limit, sl())
				}
			}
			for _, cs := range s.Consumers {
				report, inst := leads(cs.Cluster)
				key := s.Name + "/" + cs.Name
				view.consumers[key] = report
				view.leaders[key] = leader(cs.Cluster)
				if !report {
					continue
				}
				view.held[key] = float64(cs.NumPending) + float64(cs.NumAckPending)
				cl := func() map[string]string { return labels(inst, "stream", s.Name, "consumer", cs.Name) }
				point("consumer_pending", pipebench.KindGauge, float64(cs.NumPending), cl())
				point("ack_pending", pipebench.KindGauge, float64(cs.NumAckPending), cl())
				// num_redelivered is the messages redelivered and
				// not yet acked: a level, not a total.
				point("redelivered", pipebench.KindGauge, float64(cs.NumRedeliv), cl())
				point("consumer_acked_seq", pipebench.KindCounter, float64(cs.AckFloor.Stream), cl())
				paused := 0.0
				if cs.Paused {
					paused = 1
				}
				point("consumer_paused", pipebench.KindGauge, paused, cl())
			}
		}
	}
	return pts, view, nil
}

// httpError is a monitoring endpoint's answer other than 200.
type httpError struct {
	path string
	code int
}

func (e *httpError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.path, e.code) }

func (o *Observer) get(ctx context.Context, base, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
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
		p, _, _ := strings.Cut(path, "?")
		return &httpError{path: p, code: resp.StatusCode}
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(into)
}

// Close drops the idle keep-alive connections the observer's polls left
// open (the runner calls it once, after the last Observe).
func (o *Observer) Close() error {
	o.client.CloseIdleConnections()
	return nil
}
