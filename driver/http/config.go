package httpdriver

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/tlsconf"
)

// Config configures the HTTP driver.
type Config struct {
	// URL to send to; empty means the runner's target (the embedded
	// system under test, or the sink).
	URL string `yaml:"url" json:"url"`
	// Method is POST or PUT.
	Method string `yaml:"method" json:"method"`
	// Connections is the number of connections, opened at Start and
	// kept open for the run (HTTP/1.1; HTTP/2 opens what it needs).
	Connections int `yaml:"connections" json:"connections"`
	// HTTP2 sends HTTP/2: h2c (cleartext) for http://, over TLS for https://.
	HTTP2 bool `yaml:"http2" json:"http2"`
	// Pipeline, when more than 0, sends up to this many HTTP/1.1 requests
	// on a connection before their answers arrive (pipelining): far fewer
	// system calls per request, for servers that support it. 0 = off.
	Pipeline int `yaml:"pipeline" json:"pipeline,omitempty"`
	// Timeout bounds one request, from start to the end of the answer.
	Timeout pipebench.Duration `yaml:"timeout" json:"timeout"`
	// Headers are sent with every request.
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// SecretHeaders are sent with every request and never printed.
	SecretHeaders map[string]pipebench.Secret `yaml:"secret_headers" json:"secret_headers,omitempty"`
	// TLS configures https:// targets.
	TLS tlsconf.Client `yaml:"tls" json:"tls"`
	// KernelTimestamps ends each request's service time when its answer
	// reached this machine, by the kernel's receive timestamp
	// (SO_TIMESTAMPNS), rather than when the generator read it: the time
	// an answer waits for a busy generator is reported apart (read_lag).
	// HTTP/1.1 over plain TCP on Linux; pipelined, an answer is timed by
	// the read that completed it (its last packet's arrival). With them,
	// unpipelined, the open model's answers are read at the pacer's
	// wake-ups (loop_linux.go), not each as it arrives. True by default.
	KernelTimestamps bool `yaml:"kernel_timestamps" json:"kernel_timestamps"`
}

// maxConnections bounds connections: each is a socket (and a file
// descriptor) held for the whole run.
const maxConnections = 100000

func defaultConfig() *Config {
	return &Config{Method: "POST", Connections: 64, Timeout: pipebench.Duration(5 * time.Second), KernelTimestamps: true}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("url: %q is not an http:// or https:// URL", c.URL))
		}
	}
	if m := strings.ToUpper(c.Method); m != "POST" && m != "PUT" {
		errs = append(errs, fmt.Errorf("method: %q is not POST or PUT", c.Method))
	}
	if c.Connections < 1 || c.Connections > maxConnections {
		errs = append(errs, fmt.Errorf("connections: %d is outside 1..%d", c.Connections, maxConnections))
	}
	if c.Pipeline < 0 {
		errs = append(errs, fmt.Errorf("pipeline: must be 0 (off) or more"))
	}
	if c.Pipeline > 0 && c.HTTP2 {
		errs = append(errs, fmt.Errorf("pipeline: HTTP/1.1 pipelining does not apply with http2 (which multiplexes anyway)"))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("timeout: must be more than 0"))
	}
	if err := c.TLS.Validate("tls"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
