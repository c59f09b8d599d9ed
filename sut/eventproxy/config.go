package eventproxy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// StreamConfig is the JetStream stream the proxy publishes into.
type StreamConfig struct {
	// Name of the stream.
	Name string `yaml:"name" json:"name"`
	// MaxBytes limits the stream's size in bytes (0 = unlimited).
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes,omitempty"`
	// MaxMsgs limits the number of messages (0 = unlimited).
	MaxMsgs int64 `yaml:"max_msgs" json:"max_msgs,omitempty"`
	// Discard is what happens at a limit: "old" drops the oldest
	// messages, "new" refuses new publishes (the proxy answers 507).
	Discard string `yaml:"discard" json:"discard"`
	// Storage is "file" (default, in the run's directory) or "memory".
	Storage string `yaml:"storage" json:"storage"`
	// Retention is "limits" (default: messages stay until a limit
	// discards them) or "interest" (a message is removed once every
	// consumer acknowledged it; published with no consumer, it is
	// dropped at once).
	Retention string `yaml:"retention" json:"retention"`
}

// Config configures the event publisher proxy and its embedded nats-server.
type Config struct {
	// Prefix starts every subject: an event of type T is published on
	// PREFIX.T (characters other than letters, digits, '-' and '_' in T
	// become '_'); the stream captures PREFIX.>.
	Prefix string       `yaml:"prefix" json:"prefix"`
	Stream StreamConfig `yaml:"stream" json:"stream"`
	// MaxBodyBytes is the largest request body accepted (larger: 413).
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
	// PublishTimeout bounds the wait for one JetStream publish ack
	// (exceeded: 504).
	PublishTimeout pipebench.Duration `yaml:"publish_timeout" json:"publish_timeout"`
	// MaxStore is the server's JetStream file storage limit in bytes
	// (0 = the server's default, a share of the disk).
	MaxStore int64 `yaml:"max_store" json:"max_store,omitempty"`
	// StartTimeout bounds the wait for the server and the stream.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

// DefaultConfig returns the defaults: subjects events.<type>, a file stream
// EVENTS without limits discarding old messages, 1 MiB bodies, a 5 s publish
// timeout.
func DefaultConfig() *Config {
	return &Config{Prefix: "events", Stream: StreamConfig{Name: "EVENTS", Discard: "old", Storage: "file", Retention: "limits"},
		MaxBodyBytes: 1 << 20, PublishTimeout: pipebench.Duration(5 * time.Second),
		StartTimeout: pipebench.Duration(30 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Prefix == "" || strings.ContainsAny(c.Prefix, " *>\t") || strings.HasPrefix(c.Prefix, ".") || strings.HasSuffix(c.Prefix, ".") {
		errs = append(errs, fmt.Errorf("prefix: %q must be a non-empty subject without spaces or wildcards, not starting or ending with a dot", c.Prefix))
	}
	s := c.Stream
	if s.Name == "" || strings.ContainsAny(s.Name, ". *>\t") {
		errs = append(errs, fmt.Errorf("stream.name: %q must be a non-empty name without spaces, dots or wildcards", s.Name))
	}
	if s.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("stream.max_bytes: must be 0 (unlimited) or a number of bytes"))
	}
	if s.MaxMsgs < 0 {
		errs = append(errs, fmt.Errorf("stream.max_msgs: must be 0 (unlimited) or a number of messages"))
	}
	if s.Discard != "old" && s.Discard != "new" {
		errs = append(errs, fmt.Errorf("stream.discard: %q is not old or new", s.Discard))
	}
	if s.Storage != "file" && s.Storage != "memory" {
		errs = append(errs, fmt.Errorf("stream.storage: %q is not file or memory", s.Storage))
	}
	if s.Retention != "limits" && s.Retention != "interest" {
		errs = append(errs, fmt.Errorf("stream.retention: %q is not limits or interest", s.Retention))
	}
	if c.MaxBodyBytes < 1 {
		errs = append(errs, fmt.Errorf("max_body_bytes: must be at least 1"))
	}
	if c.PublishTimeout <= 0 {
		errs = append(errs, fmt.Errorf("publish_timeout: must be more than 0, e.g. 5s"))
	}
	if c.MaxStore < 0 {
		errs = append(errs, fmt.Errorf("max_store: must be 0 (the server's default) or a number of bytes"))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, fmt.Errorf("start_timeout: must be more than 0, e.g. 30s"))
	}
	return errors.Join(errs...)
}
