// Package kafkaobs observes a Kafka cluster through its admin API
// (franz-go's kadm): every consumer group's lag per partition and in total
// (committed offsets against log-end offsets, as kafka-consumer-groups
// --describe computes it), the topics' log-end offsets and sizes, and the
// partitions the brokers' metadata shows under-replicated or offline.
//
// A group's total lag on a topic is consumer_pending, the backlog series
// the JetStream observer feeds too: the runner's drain waits on it, and
// the backlog detectors and `pipebench limit` read it the same way.
package kafkaobs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
)

// Config configures the observer.
type Config struct {
	// Bootstrap is the brokers' host:port, comma-separated; empty
	// observes the embedded kafka SUT.
	Bootstrap string `yaml:"bootstrap" json:"bootstrap,omitempty"`
	// Groups to report (empty: every group).
	Groups []string `yaml:"groups" json:"groups,omitempty"`
	// Topics to report (empty: every topic but Kafka's internal ones).
	Topics []string `yaml:"topics" json:"topics,omitempty"`
	// Partitions reports each partition's lag (consumer_lag) besides the
	// totals.
	Partitions bool `yaml:"partitions" json:"partitions"`
	// Timeout bounds one observation.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// SASL is the authentication, as for the kafka driver.
	SASL kafkaclient.SASL `yaml:"sasl" json:"sasl"`
	// TLS is the client TLS, as for the kafka driver.
	TLS kafkaclient.TLS `yaml:"tls" json:"tls"`
}

// DefaultConfig returns the defaults: every group and topic, each
// partition's lag too, a 5 s timeout.
func DefaultConfig() *Config {
	return &Config{Partitions: true, Timeout: pipebench.Duration(5 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	errs := kafkaclient.ValidateBootstrap(c.Bootstrap)
	for _, t := range c.Topics {
		if !kafkaclient.ValidTopic(t) {
			errs = append(errs, fmt.Errorf("topics: %q is not a topic name", t))
		}
	}
	for _, g := range c.Groups {
		if g == "" {
			errs = append(errs, fmt.Errorf("groups: a group name must not be empty"))
		}
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	errs = append(errs, c.SASL.Validate()...)
	errs = append(errs, c.TLS.Validate()...)
	return errors.Join(errs...)
}

// Factory returns the factory of the "kafka" observer.
func Factory() pipebench.Factory[pipebench.Observer] {
	return pipebench.NewFactory("kafka",
		"Kafka admin API: consumer-group lag per partition and in total (the backlog), log-end offsets, topic sizes, under-replicated and offline partitions",
		DefaultConfig,
		func(c *Config, env pipebench.Env) (pipebench.Observer, error) { return New(*c, env.Target) })
}

// Observer polls the cluster. Observe is called from one goroutine at a
// time; Close once after the last.
type Observer struct {
	cfg Config
	cl  *kgo.Client
	adm *kadm.Client
	// topics are those of the last metadata the brokers gave.
	topics []string
}

var (
	_ pipebench.Observer = (*Observer)(nil)
)

// New returns an observer of cfg.Bootstrap, or of target (the embedded
// SUT's bootstrap list) when that is empty.
func New(cfg Config, target string) (*Observer, error) {
	if cfg.Bootstrap == "" && !strings.Contains(target, "://") {
		cfg.Bootstrap = target
	}
	if cfg.Bootstrap == "" {
		return nil, pipebench.UsageError("the kafka observer has no brokers to observe",
			"set its bootstrap (HOST:9092), or use it with sut: {type: kafka}", nil)
	}
	opts, err := kafkaclient.Opts(cfg.Bootstrap, "pipebench-observer", cfg.SASL, cfg.TLS)
	if err != nil {
		return nil, pipebench.UsageError("kafka observer", "", err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RequestTimeoutOverhead(cfg.Timeout.D()))...)
	if err != nil {
		return nil, pipebench.UsageError("kafka observer", "", err)
	}
	return &Observer{cfg: cfg, cl: cl, adm: kadm.NewClient(cl)}, nil
}

// Observe returns:
//
//	consumer_pending                  per group and topic: the group's lag, summed over partitions
//	consumer_lag                      per group, topic and partition (partitions: true)
//	consumer_committed_offset         per group and topic: committed offsets, summed (a counter: its rate is the consumed rate)
//	log_end_offset                    per topic: log-end offsets, summed (a counter: its rate is the produced rate)
//	stream_bytes                      per topic: the size of its partitions' logs on their leaders
//	under_replicated_partitions       per topic and in total (topic ""): partitions with fewer in-sync replicas than replicas
//	offline_partitions                per topic and in total: partitions without a leader
//	brokers                           the brokers in the cluster's metadata
//
// A group's partition whose lag cannot be computed (no committed offset
// yet) counts its whole log as lag, as a new group starting from the
// earliest offset would read it.
func (o *Observer) Observe(ctx context.Context, at time.Time) ([]pipebench.Point, error) {
	ctx, cancel := context.WithTimeout(ctx, o.cfg.Timeout.D())
	defer cancel()
	var pts []pipebench.Point
	add := func(name string, kind pipebench.MetricKind, v float64, kv ...string) {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		pts = append(pts, pipebench.Point{Name: name, Labels: l, Kind: kind, At: at, Value: v})
	}
	md, err := o.adm.Metadata(ctx, o.cfg.Topics...)
	if err != nil {
		why := fmt.Sprintf("the brokers did not answer for their metadata (%v)", err)
		out := []pipebench.Point{unknownHeld("", why, at)}
		for _, t := range o.topics {
			out = append(out, unknownHeld("topic "+t, why, at))
		}
		return out, fmt.Errorf("metadata: %w", err)
	}
	add("brokers", pipebench.KindGauge, float64(len(md.Brokers)))
	var topics []string
	var underAll, offlineAll int
	for _, name := range md.Topics.Names() {
		td := md.Topics[name]
		if td.IsInternal || td.Err != nil || strings.HasPrefix(name, "__") {
			continue
		}
		topics = append(topics, name)
		under, offline := 0, 0
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				offline++
			}
			if len(p.ISR) < len(p.Replicas) {
				under++
			}
		}
		underAll += under
		offlineAll += offline
		add("under_replicated_partitions", pipebench.KindGauge, float64(under), "topic", name)
		add("offline_partitions", pipebench.KindGauge, float64(offline), "topic", name)
	}
	add("under_replicated_partitions", pipebench.KindGauge, float64(underAll))
	add("offline_partitions", pipebench.KindGauge, float64(offlineAll))
	o.topics = topics
	if len(topics) == 0 {
		return pts, nil
	}
	var errs []error
	// why says, per topic, why what its log holds for its readers
	// cannot be read.
	why := map[string][]string{}
	for _, t := range topics {
		for p, pd := range md.Topics[t].Partitions {
			if pd.Leader < 0 {
				why[t] = append(why[t], fmt.Sprintf("partition %d has no leader (its log cannot be read)", p))
			}
		}
	}
	ends, err := o.adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		errs = append(errs, fmt.Errorf("end offsets: %w", err))
		for _, t := range topics {
			why[t] = append(why[t], fmt.Sprintf("the brokers did not give the log-end offsets (%v)", err))
		}
	} else {
		sum := map[string]int64{}
		ends.Each(func(lo kadm.ListedOffset) {
			if lo.Err == nil {
				sum[lo.Topic] += lo.Offset
			} else {
				why[lo.Topic] = append(why[lo.Topic], fmt.Sprintf("partition %d's log-end offset: %v", lo.Partition, lo.Err))
			}
		})
		for _, t := range topics {
			add("log_end_offset", pipebench.KindCounter, float64(sum[t]), "topic", t)
		}
	}
	if err := o.sizes(ctx, md, topics, add); err != nil {
		errs = append(errs, err)
	}
	held, err := o.lags(ctx, topics, add)
	if err != nil {
		errs = append(errs, err)
		for _, t := range topics {
			why[t] = append(why[t], fmt.Sprintf("the groups' lag: %v", err))
		}
	}
	// The ledger: per topic, the records in its log that the groups
	// reading it have not consumed (their lag against the log-end
	// offsets the partitions' leaders give).
	for _, t := range topics {
		if len(why[t]) > 0 {
			slices.Sort(why[t])
			pts = append(pts, unknownHeld("topic "+t, strings.Join(slices.Compact(why[t]), "; "), at))
			continue
		}
		pts = append(pts, pipebench.Point{Name: pipebench.LedgerHeld, Labels: map[string]string{"where": "topic " + t}, Kind: pipebench.KindGauge, At: at, Value: float64(held[t])})
	}
	return pts, errors.Join(errs...)
}

// unknownHeld is a ledger point saying what a topic (where) holds cannot
// be read, and why.
func unknownHeld(where, why string, at time.Time) pipebench.Point {
	l := map[string]string{"term": "held", "because": why}
	if where != "" {
		l["where"] = where
	}
	return pipebench.Point{Name: pipebench.LedgerUnknown, Labels: l, Kind: pipebench.KindGauge, At: at, Value: 1}
}

// sizes adds stream_bytes: each topic's partitions' log sizes on their
// leaders (every log dir is described; the observed topics are kept).
func (o *Observer) sizes(ctx context.Context, md kadm.Metadata, topics []string, add func(string, pipebench.MetricKind, float64, ...string)) error {
	dirs, err := o.adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return fmt.Errorf("log dirs: %w", err)
	}
	size := map[string]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if td, ok := md.Topics[p.Topic]; ok {
				if pd, ok := td.Partitions[p.Partition]; ok && pd.Leader == p.Broker {
					size[p.Topic] += p.Size
				}
			}
		})
	})
	for _, t := range topics {
		add("stream_bytes", pipebench.KindGauge, float64(size[t]), "topic", t)
	}
	return nil
}

// lags adds the groups' lags on the observed topics, and returns each
// topic's, summed over its groups.
func (o *Observer) lags(ctx context.Context, topics []string, add func(string, pipebench.MetricKind, float64, ...string)) (map[string]int64, error) {
	held := map[string]int64{}
	groups := o.cfg.Groups
	if len(groups) == 0 {
		listed, err := o.adm.ListGroups(ctx)
		if err != nil {
			return held, fmt.Errorf("list groups: %w", err)
		}
		groups = listed.Groups()
	}
	if len(groups) == 0 {
		return held, nil
	}
	lags, err := o.adm.Lag(ctx, groups...)
	if err != nil {
		return held, fmt.Errorf("group lag: %w", err)
	}
	var errs []error
	for _, g := range lags.Sorted() {
		if err := g.Error(); err != nil {
			errs = append(errs, fmt.Errorf("group %s: %w", g.Group, err))
			continue
		}
		for _, t := range topics {
			parts, ok := g.Lag[t]
			if !ok {
				continue
			}
			var total, committed int64
			ps := make([]int32, 0, len(parts))
			for p := range parts {
				ps = append(ps, p)
			}
			slices.Sort(ps)
			for _, p := range ps {
				l := parts[p]
				lag := l.Lag
				if lag < 0 && l.End.Err == nil {
					lag = l.End.Offset - max(l.Start.Offset, 0)
				}
				if l.Commit.At >= 0 {
					committed += l.Commit.At
				}
				total += max(lag, 0)
				if o.cfg.Partitions {
					add("consumer_lag", pipebench.KindGauge, float64(max(lag, 0)), "group", g.Group, "topic", t, "partition", strconv.Itoa(int(p)))
				}
			}
			held[t] += total
			add("consumer_pending", pipebench.KindGauge, float64(total), "group", g.Group, "topic", t)
			add("consumer_committed_offset", pipebench.KindCounter, float64(committed), "group", g.Group, "topic", t)
		}
	}
	return held, errors.Join(errs...)
}

// Close closes the observer's client (the runner calls it once, after the
// last Observe).
func (o *Observer) Close() error {
	o.cl.Close()
	return nil
}
