package natsdriver

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
)

// The publish modes.
const (
	ModeCore    = "core"            // core NATS publish: fire and forget
	ModeJS      = "jetstream"       // JetStream publish, waiting for each ack
	ModeJSAsync = "jetstream-async" // JetStream async publish, a bounded window of outstanding acks per connection
)

// Config configures the NATS driver.
type Config struct {
	// URL of the server ("nats://127.0.0.1:4222", several separated by
	// commas); empty means the runner's target (the embedded jetstream).
	URL string `yaml:"url" json:"url"`
	// Mode is core, jetstream or jetstream-async.
	Mode string `yaml:"mode" json:"mode"`
	// Connections are opened at start and held; sends are spread over
	// them in turn.
	Connections int `yaml:"connections" json:"connections"`
	// Subject is the subject template: {conn} is the connection's index,
	// {key} the batch's routing key.
	Subject string `yaml:"subject" json:"subject"`
	// Window is the most async publishes awaiting their ack on one
	// connection (jetstream-async); a send waits for room.
	Window int `yaml:"window" json:"window"`
	// Timeout bounds the wait for a publish ack.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Split publishes each item of a batch as its own message (a JSON
	// array body of Count events becomes Count messages, each with its
	// own sequence header); false publishes the batch as one message.
	Split bool `yaml:"split" json:"split"`
	// ConnectConcurrency is how many connections are opened at once.
	ConnectConcurrency int `yaml:"connect_concurrency" json:"connect_concurrency"`
	// Creds is a credentials file (a user JWT and its NKey seed, as nsc
	// writes them; nats bench --creds): every connection presents the JWT
	// and signs the server's nonce with the seed.
	Creds string `yaml:"creds" json:"creds,omitempty"`
	// NKey is a file holding an NKey seed (nats bench --nkey): every
	// connection presents its public key and signs the server's nonce.
	NKey string `yaml:"nkey" json:"nkey,omitempty"`
	// TLS configures TLS for tls:// URLs and servers that require it.
	TLS tlsconf.Client `yaml:"tls" json:"tls,omitzero"`
	// NoDiscovery keeps every connection to the servers of url; by
	// default the servers a cluster announces are used too (on
	// reconnection, and when a server enters lame duck mode).
	NoDiscovery bool `yaml:"no_discovery" json:"no_discovery,omitempty"`
}

// DefaultConfig returns the defaults: JetStream async publish on one
// connection to events.{conn}, a window of 256, a 5 s ack timeout.
func DefaultConfig() *Config {
	return &Config{Mode: ModeJSAsync, Connections: 1, Subject: "events.{conn}", Window: 256,
		Timeout: pipebench.Duration(5 * time.Second), Split: true, ConnectConcurrency: 16}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	for _, u := range splitURLs(c.URL) {
		if !strings.HasPrefix(u, "nats://") && !strings.HasPrefix(u, "tls://") {
			errs = append(errs, fmt.Errorf("url: %q is not a nats:// URL", u))
		}
	}
	if c.Mode != ModeCore && c.Mode != ModeJS && c.Mode != ModeJSAsync {
		errs = append(errs, fmt.Errorf("mode: %q is not %s, %s or %s", c.Mode, ModeCore, ModeJS, ModeJSAsync))
	}
	if c.Connections < 1 || c.Connections > 100000 {
		errs = append(errs, fmt.Errorf("connections: %d is outside 1..100000", c.Connections))
	}
	if c.Subject == "" || strings.ContainsAny(c.Subject, " \t*>") {
		errs = append(errs, fmt.Errorf("subject: %q must be a subject without spaces or wildcards (placeholders {conn} and {key})", c.Subject))
	} else if rest := strings.NewReplacer("{conn}", "", "{key}", "").Replace(c.Subject); strings.ContainsAny(rest, "{}") {
		errs = append(errs, fmt.Errorf("subject: %q has a placeholder other than {conn} and {key}", c.Subject))
	}
	if c.Window < 1 {
		errs = append(errs, fmt.Errorf("window: must be at least 1"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	if c.ConnectConcurrency < 1 {
		errs = append(errs, fmt.Errorf("connect_concurrency: must be at least 1"))
	}
	if c.Creds != "" && c.NKey != "" {
		errs = append(errs, fmt.Errorf("creds: give creds or nkey, not both"))
	}
	for _, f := range []struct{ key, path string }{{"creds", c.Creds}, {"nkey", c.NKey}} {
		if f.path == "" {
			continue
		}
		if _, err := tlsconf.ReadFile(f.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.key, err))
		}
	}
	errs = append(errs, c.TLS.Validate("tls"))
	return errors.Join(errs...)
}

func splitURLs(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}
