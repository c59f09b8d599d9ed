// Package promagent runs Prometheus in agent mode (the Debian package's
// binary, or any prometheus 2.x found on PATH) as the system under test:
// the metric agent of the telemetry reference. It scrapes the address the
// runner's driver serves on (its Endpoint: the prometheus-scrape driver
// listens there) and any extra targets (pipebench producers), and
// remote-writes everything to the sink (the prometheus-remote-write
// sink's URL, Env.Target). Its own metrics are its /metrics, listed in
// Instances for the Prometheus and process observers.
package promagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
)

// Queue mirrors remote_write's queue_config.
type Queue struct {
	Capacity          int                `yaml:"capacity" json:"capacity"`
	MaxShards         int                `yaml:"max_shards" json:"max_shards"`
	MaxSamplesPerSend int                `yaml:"max_samples_per_send" json:"max_samples_per_send"`
	BatchSendDeadline pipebench.Duration `yaml:"batch_send_deadline" json:"batch_send_deadline"`
	MinBackoff        pipebench.Duration `yaml:"min_backoff" json:"min_backoff"`
	MaxBackoff        pipebench.Duration `yaml:"max_backoff" json:"max_backoff"`
}

// Config configures the agent.
type Config struct {
	// Binary is the prometheus executable: a path, or a name looked up on
	// PATH.
	Binary         string             `yaml:"binary" json:"binary"`
	ScrapeInterval pipebench.Duration `yaml:"scrape_interval" json:"scrape_interval"`
	// Targets are extra host:port scrape targets (pipebench producers),
	// scraped as job "producers".
	Targets []string `yaml:"targets" json:"targets,omitempty"`
	// TargetsSD is an HTTP service discovery URL for extra targets
	// (`pipebench producers` serves one at /targets).
	TargetsSD    string             `yaml:"targets_sd" json:"targets_sd,omitempty"`
	Queue        Queue              `yaml:"queue" json:"queue"`
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

func defaultConfig() *Config {
	return &Config{Binary: "prometheus", ScrapeInterval: pipebench.Duration(time.Second),
		Queue: Queue{Capacity: 2500, MaxShards: 200, MaxSamplesPerSend: 500, BatchSendDeadline: pipebench.Duration(time.Second),
			MinBackoff: pipebench.Duration(30 * time.Millisecond), MaxBackoff: pipebench.Duration(time.Second)},
		StartTimeout: pipebench.Duration(30 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Binary == "" {
		errs = append(errs, errors.New("binary: give the prometheus executable"))
	}
	if c.ScrapeInterval.D() < 100*time.Millisecond {
		errs = append(errs, errors.New("scrape_interval: must be at least 100ms"))
	}
	for _, t := range c.Targets {
		if _, _, err := net.SplitHostPort(t); err != nil {
			errs = append(errs, fmt.Errorf("targets: %q is not host:port", t))
		}
	}
	if c.TargetsSD != "" && !strings.HasPrefix(c.TargetsSD, "http://") && !strings.HasPrefix(c.TargetsSD, "https://") {
		errs = append(errs, fmt.Errorf("targets_sd: %q is not an http:// URL", c.TargetsSD))
	}
	q := c.Queue
	if q.Capacity < 1 || q.MaxShards < 1 || q.MaxSamplesPerSend < 1 {
		errs = append(errs, errors.New("queue: capacity, max_shards and max_samples_per_send must be at least 1"))
	}
	if q.BatchSendDeadline <= 0 || q.MinBackoff <= 0 || q.MaxBackoff < q.MinBackoff {
		errs = append(errs, errors.New("queue: batch_send_deadline and min_backoff must be more than 0, max_backoff at least min_backoff"))
	}
	if c.StartTimeout <= 0 {
		errs = append(errs, errors.New("start_timeout: must be more than 0"))
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "prometheus-agent" SUT. It needs the
// remote-write sink's URL as Env.Target.
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("prometheus-agent", "Prometheus in agent mode (the Debian package's binary) scraping the prometheus-scrape driver and producers, remote-writing to the sink",
		defaultConfig, func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			if !strings.HasPrefix(env.Target, "http://") && !strings.HasPrefix(env.Target, "https://") {
				return nil, pipebench.UsageError(fmt.Sprintf("the prometheus agent remote-writes to a URL, and the sink gave %q", env.Target),
					"add sink: {type: prometheus-remote-write} to the scenario", nil)
			}
			return &Agent{cfg: *c, sink: env.Target, dir: env.ScratchDir()}, nil
		})
}

// Agent is the running prometheus process. Start once, Shutdown once.
type Agent struct {
	cfg                 Config
	sink, dir           string
	webPort, scrapePort int
	proc                *childproc.Proc
}

var _ pipebench.SUT = (*Agent)(nil)

func freePort() (int, error) { return childproc.FreePort() }

// YAML returns the agent's configuration.
func (a *Agent) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  scrape_timeout: %s\n", a.cfg.ScrapeInterval.D(), a.cfg.ScrapeInterval.D())
	fmt.Fprintf(&b, "scrape_configs:\n  - job_name: pipebench\n    honor_timestamps: true\n    static_configs:\n      - targets: [\"127.0.0.1:%d\"]\n", a.scrapePort)
	if len(a.cfg.Targets) > 0 || a.cfg.TargetsSD != "" {
		b.WriteString("  - job_name: producers\n")
		if len(a.cfg.Targets) > 0 {
			qs := make([]string, len(a.cfg.Targets))
			for i, t := range a.cfg.Targets {
				qs[i] = strconv.Quote(t)
			}
			fmt.Fprintf(&b, "    static_configs:\n      - targets: [%s]\n", strings.Join(qs, ", "))
		}
		if a.cfg.TargetsSD != "" {
			fmt.Fprintf(&b, "    http_sd_configs:\n      - url: %s\n", strconv.Quote(a.cfg.TargetsSD))
		}
	}
	q := a.cfg.Queue
	fmt.Fprintf(&b, "remote_write:\n  - url: %s\n    queue_config:\n      capacity: %d\n      max_shards: %d\n      max_samples_per_send: %d\n      batch_send_deadline: %s\n      min_backoff: %s\n      max_backoff: %s\n",
		strconv.Quote(a.sink), q.Capacity, q.MaxShards, q.MaxSamplesPerSend, q.BatchSendDeadline.D(), q.MinBackoff.D(), q.MaxBackoff.D())
	return b.String()
}

// Start writes the configuration, starts prometheus --enable-feature=agent
// on loopback and waits until it is ready.
func (a *Agent) Start(ctx context.Context) error {
	bin, err := exec.LookPath(a.cfg.Binary)
	if err != nil {
		return pipebench.UsageError(fmt.Sprintf("prometheus-agent: %s is not installed", a.cfg.Binary),
			"install it (Debian: apt-get install prometheus) or give its path as binary", err)
	}
	for _, p := range []*int{&a.webPort, &a.scrapePort} {
		if *p, err = freePort(); err != nil {
			return err
		}
	}
	path := filepath.Join(a.dir, "prometheus-agent.yml")
	if err := os.WriteFile(path, []byte(a.YAML()), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(bin, "--enable-feature=agent", "--config.file="+path,
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(a.webPort),
		"--storage.agent.path="+filepath.Join(a.dir, "prometheus-agent-wal"), "--log.level=warn")
	if a.proc, err = childproc.Start("prometheus", cmd, filepath.Join(a.dir, "prometheus-agent.log")); err != nil {
		return err
	}
	err = a.proc.WaitReady(ctx, a.cfg.StartTimeout.D(), func() bool { return childproc.Answers(a.web()+"/-/ready", http.StatusOK, 0) })
	if err != nil {
		a.Shutdown(context.Background())
	}
	return err
}

func (a *Agent) web() string { return "http://127.0.0.1:" + strconv.Itoa(a.webPort) }

// Endpoint is the host:port the agent scrapes: the prometheus-scrape
// driver serves there.
func (a *Agent) Endpoint() string { return "127.0.0.1:" + strconv.Itoa(a.scrapePort) }

// Instances implements pipebench.SUT: the agent process and its /metrics.
func (a *Agent) Instances() []pipebench.Instance {
	return []pipebench.Instance{{Name: "prometheus-agent", PID: a.proc.PID(), MetricsURL: a.web() + "/metrics"}}
}

// Shutdown sends SIGTERM, waits (bounded by ctx, at most 15 s), then kills.
func (a *Agent) Shutdown(ctx context.Context) error {
	return childproc.Stop(ctx, a.proc)
}
