package kafkadriver

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/kafkaclient"
)

// The ways of choosing a record's key.
const (
	KeysNone       = "none"        // no key: the client's sticky partitioning spreads batches over the partitions
	KeysRoundRobin = "round_robin" // no key, each record to the next partition in turn
	KeysField      = "field"       // the value of a JSON field of the event, hashed to a partition as the Java client does (murmur2)
)

// Config configures the Kafka driver.
type Config struct {
	// Bootstrap is the brokers' host:port, comma-separated; empty means
	// the runner's target (the embedded kafka SUT).
	Bootstrap string `yaml:"bootstrap" json:"bootstrap,omitempty"`
	// Topic to produce to.
	Topic string `yaml:"topic" json:"topic"`
	// Keys is none, round_robin or field.
	Keys string `yaml:"keys" json:"keys"`
	// KeyField is the JSON field whose value is the key (keys: field).
	KeyField string `yaml:"key_field" json:"key_field,omitempty"`
	// Acks is how many replicas must have a record before it counts as
	// written: "0" (none: the send is done once written to the socket),
	// "1" (the leader) or "all" (every in-sync replica).
	Acks string `yaml:"acks" json:"acks"`
	// Idempotent makes the producer idempotent (no duplicates from its
	// retries, order kept per partition); it needs acks: all.
	Idempotent bool `yaml:"idempotent" json:"idempotent"`
	// Compression is none, gzip, snappy, lz4 or zstd.
	Compression string `yaml:"compression" json:"compression"`
	// Linger is how long a partition's batch waits for more records.
	Linger pipebench.Duration `yaml:"linger" json:"linger"`
	// BatchSize is the most bytes of one partition's record batch.
	BatchSize int `yaml:"batch_size" json:"batch_size"`
	// MaxBuffered is the most records a producer holds unacknowledged; a
	// send that finds it full is refused (backpressure) rather than
	// waiting.
	MaxBuffered int `yaml:"max_buffered" json:"max_buffered"`
	// Timeout bounds a record's delivery, retries included
	// (delivery.timeout.ms).
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Retries is how many times a produce the broker failed with a
	// retriable error is retried within the timeout. A few (3 by
	// default) let a refusal such as NOT_ENOUGH_REPLICAS reach the
	// outcome within seconds; -1 retries until the timeout, as Java's
	// producer does, and a refusal then shows as a delivery timeout.
	Retries int `yaml:"retries" json:"retries"`
	// Connections are the producers (each its own client and
	// connections to the brokers); sends are spread over them in turn.
	Connections int `yaml:"connections" json:"connections"`
	// Split produces each item of a batch as its own record (a JSON
	// array body of Count events becomes Count records, each with its
	// own sequence header); false produces the batch as one record.
	Split bool `yaml:"split" json:"split"`
	// Headers are added to every record.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// ClientID names the producers to the brokers (quotas are set per
	// client id).
	ClientID string `yaml:"client_id" json:"client_id"`
	// SASL authenticates the connections.
	SASL kafkaclient.SASL `yaml:"sasl" json:"sasl"`
	// TLS encrypts the connections.
	TLS kafkaclient.TLS `yaml:"tls" json:"tls"`
}

// DefaultConfig returns the defaults, Apache Kafka's producer defaults
// where they apply: topic events, no key, acks all, idempotent, no
// compression, linger 5 ms, batches of 1 MiB, 30 s delivery timeout, 3
// retries, one producer.
func DefaultConfig() *Config {
	return &Config{Topic: "events", Keys: KeysNone, Acks: "all", Idempotent: true, Compression: "none",
		Linger: pipebench.Duration(5 * time.Millisecond), BatchSize: 1 << 20, MaxBuffered: 100000,
		Timeout: pipebench.Duration(30 * time.Second), Retries: 3, Connections: 1, Split: true, ClientID: "pipebench"}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, kafkaclient.ValidateBootstrap(c.Bootstrap)...)
	if !kafkaclient.ValidTopic(c.Topic) {
		errs = append(errs, fmt.Errorf("topic: %q is not a topic name (letters, digits, '.', '_', '-')", c.Topic))
	}
	switch c.Keys {
	case KeysNone, KeysRoundRobin:
	case KeysField:
		if c.KeyField == "" {
			errs = append(errs, fmt.Errorf("key_field: keys: field needs the JSON field to key by"))
		}
	default:
		errs = append(errs, fmt.Errorf("keys: %q is not none, round_robin or field", c.Keys))
	}
	if c.Acks != "0" && c.Acks != "1" && c.Acks != "all" && c.Acks != "-1" {
		errs = append(errs, fmt.Errorf("acks: %q is not 0, 1 or all", c.Acks))
	}
	if c.Idempotent && c.Acks != "all" && c.Acks != "-1" {
		errs = append(errs, fmt.Errorf("idempotent: an idempotent producer needs acks: all; set idempotent: false for acks %s", c.Acks))
	}
	if _, err := codec(c.Compression); err != nil {
		errs = append(errs, fmt.Errorf("compression: %v", err))
	}
	if c.Linger < 0 {
		errs = append(errs, fmt.Errorf("linger: must be 0 or more"))
	}
	if c.BatchSize < 1024 || c.BatchSize > 64<<20 {
		errs = append(errs, fmt.Errorf("batch_size: %d is outside 1024..67108864 bytes", c.BatchSize))
	}
	if c.MaxBuffered < 1 {
		errs = append(errs, fmt.Errorf("max_buffered: must be at least 1"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	if c.Retries < -1 {
		errs = append(errs, fmt.Errorf("retries: must be -1 (until the timeout) or more"))
	}
	if c.Connections < 1 || c.Connections > 100000 {
		errs = append(errs, fmt.Errorf("connections: %d is outside 1..100000", c.Connections))
	}
	if c.ClientID == "" {
		errs = append(errs, fmt.Errorf("client_id: must not be empty"))
	}
	errs = append(errs, c.SASL.Validate()...)
	errs = append(errs, c.TLS.Validate()...)
	return errors.Join(errs...)
}

// codec returns the compression codec named s.
func codec(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("%q is not none, gzip, snappy, lz4 or zstd", s)
}

var _ pipebench.ResourceUser = (*Config)(nil)

// Uses implements pipebench.ResourceUser: the topic, when the driver
// produces to the embedded kafka system under test (no bootstrap of its
// own).
func (c *Config) Uses() []pipebench.Resource {
	if c.Bootstrap != "" {
		return nil
	}
	return []pipebench.Resource{{Kind: kafkaclient.TopicKind, Name: c.Topic, Key: "topic"}}
}
