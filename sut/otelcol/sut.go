// Package otelcol runs a real OpenTelemetry Collector (0.162, built from the
// collector's own modules) as the embedded system under test: the pipebench
// binary re-executes itself as a child process, so the collector's memory
// and CPU are measured apart from the generator's. The collector receives
// OTLP, batches, and exports with a sending queue and retry_on_failure to
// pipebench's sink; its own metrics are served on a Prometheus endpoint.
package otelcol

import (
	"bufio"
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
	"syscall"
	"time"

	"github.com/pipebench/pipebench"
)

// Retry mirrors the exporter's retry_on_failure.
type Retry struct {
	Enabled         bool               `yaml:"enabled" json:"enabled"`
	InitialInterval pipebench.Duration `yaml:"initial_interval" json:"initial_interval"`
	MaxInterval     pipebench.Duration `yaml:"max_interval" json:"max_interval"`
	MaxElapsedTime  pipebench.Duration `yaml:"max_elapsed_time" json:"max_elapsed_time"`
}

// Batch mirrors the batch processor's settings.
type Batch struct {
	SendBatchSize int                `yaml:"send_batch_size" json:"send_batch_size"`
	Timeout       pipebench.Duration `yaml:"timeout" json:"timeout"`
}

// Config configures the embedded collector.
type Config struct {
	// Pipelines fed by the one receiver, each exporting to the sink (the
	// reference's multi-pipeline case is 3: every item then arrives 3
	// times, and the sink counts the extra copies as duplicates).
	Pipelines int `yaml:"pipelines" json:"pipelines"`
	// Signal is traces, metrics or logs.
	Signal string `yaml:"signal" json:"signal"`
	// Exporter is otlp (gRPC) or otlphttp.
	Exporter     string `yaml:"exporter" json:"exporter"`
	QueueSize    int    `yaml:"queue_size" json:"queue_size"`
	NumConsumers int    `yaml:"num_consumers" json:"num_consumers"`
	Retry        Retry  `yaml:"retry_on_failure" json:"retry_on_failure"`
	Batch        Batch  `yaml:"batch" json:"batch"`
	// GOMEMLIMIT for the child, e.g. "400MiB" ("" = unset).
	GoMemLimit string `yaml:"gomemlimit" json:"gomemlimit,omitempty"`
	// ConfigFile runs your own collector YAML instead of the generated
	// one; it must receive OTLP gRPC on ${env:PIPEBENCH_OTLP_GRPC} (and
	// OTLP/HTTP on ${env:PIPEBENCH_OTLP_HTTP}, if drivers send HTTP),
	// export to ${env:PIPEBENCH_SINK} (host:port for the otlp exporter, a
	// URL for otlphttp, as the exporter setting picks) and serve metrics
	// on ${env:PIPEBENCH_METRICS_PORT}.
	ConfigFile string `yaml:"config_file" json:"config_file,omitempty"`
	// StartTimeout bounds the wait for the collector to come up.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
}

func defaultConfig() *Config {
	return &Config{Pipelines: 1, Signal: "traces", Exporter: "otlp", QueueSize: 1000, NumConsumers: 10,
		Retry:        Retry{Enabled: true, InitialInterval: pipebench.Duration(time.Second), MaxInterval: pipebench.Duration(5 * time.Second), MaxElapsedTime: pipebench.Duration(5 * time.Minute)},
		Batch:        Batch{SendBatchSize: 8192, Timeout: pipebench.Duration(200 * time.Millisecond)},
		StartTimeout: pipebench.Duration(60 * time.Second)}
}

// Validate reports every problem, each prefixed with its key.
func (c *Config) Validate() error {
	var errs []error
	if c.Pipelines < 1 || c.Pipelines > 20 {
		errs = append(errs, fmt.Errorf("pipelines: %d is outside 1..20", c.Pipelines))
	}
	if c.Signal != "traces" && c.Signal != "metrics" && c.Signal != "logs" {
		errs = append(errs, fmt.Errorf("signal: %q is not traces, metrics or logs", c.Signal))
	}
	if c.Exporter != "otlp" && c.Exporter != "otlphttp" {
		errs = append(errs, fmt.Errorf("exporter: %q is not otlp or otlphttp", c.Exporter))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("queue_size: must be at least 1"))
	}
	if c.NumConsumers < 1 {
		errs = append(errs, fmt.Errorf("num_consumers: must be at least 1"))
	}
	if c.ConfigFile != "" {
		if _, err := os.Stat(c.ConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("config_file: cannot read %s", c.ConfigFile))
		}
	}
	return errors.Join(errs...)
}

// Factory returns the factory of the "otelcol" SUT. The collector exports
// to the sink's endpoint for its exporter's protocol: Env.Targets["grpc"]
// for otlp and Env.Targets["http"] for otlphttp, else Env.Target when it
// is of that protocol (a URL for otlphttp, host:port for otlp).
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("otelcol", "a real OpenTelemetry Collector "+CollectorVersion+" as a child process: otlp -> batch -> otlp/otlphttp exporter with queue and retry",
		defaultConfig, func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			sink, err := sinkEndpoint(c.Exporter, env)
			if err != nil {
				return nil, err
			}
			dir := env.Dir
			if dir == "" {
				dir = os.TempDir()
			}
			return &Collector{cfg: *c, sink: sink, dir: dir}, nil
		})
}

// sinkEndpoint picks where the exporter sends: a base URL for otlphttp,
// host:port for otlp.
func sinkEndpoint(exporter string, env pipebench.Env) (string, error) {
	if env.Target == "" && len(env.Targets) == 0 {
		return "", pipebench.UsageError("the collector has nowhere to export to", "add a sink: {type: otlp} to the scenario", nil)
	}
	if exporter == "otlphttp" {
		if e := env.Targets["http"]; e != "" {
			if !strings.Contains(e, "://") {
				e = "http://" + e
			}
			return e, nil
		}
		if strings.HasPrefix(env.Target, "http://") || strings.HasPrefix(env.Target, "https://") {
			return env.Target, nil
		}
		return "", pipebench.UsageError(fmt.Sprintf("exporter: otlphttp needs the sink's OTLP/HTTP endpoint, and the sink gave only %q", env.Target),
			"give the otlp sink an http_listen, or use exporter: otlp", nil)
	}
	if e := env.Targets["grpc"]; e != "" {
		return hostPort(e), nil
	}
	if strings.HasPrefix(env.Target, "http://") || strings.HasPrefix(env.Target, "https://") {
		return "", pipebench.UsageError(fmt.Sprintf("exporter: otlp (gRPC) needs the sink's OTLP/gRPC endpoint, and the sink gave only %q", env.Target),
			"give the otlp sink a grpc_listen, or use exporter: otlphttp", nil)
	}
	return env.Target, nil
}

// hostPort strips a URL down to its host:port.
func hostPort(e string) string {
	if i := strings.Index(e, "://"); i >= 0 {
		e = strings.TrimSuffix(e[i+3:], "/")
	}
	return e
}

// Collector is the running child. Start once, Shutdown once.
type Collector struct {
	cfg                          Config
	sink                         string // the exporter's endpoint: host:port for otlp, a URL for otlphttp
	dir                          string
	grpcPort, httpPort, metricsP int
	cmd                          *exec.Cmd
	logPath                      string
	exited                       chan error
}

var (
	_ pipebench.SUT           = (*Collector)(nil)
	_ pipebench.MultiEndpoint = (*Collector)(nil)
)

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// YAML returns the generated collector configuration.
func (c *Collector) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:%d\n      http:\n        endpoint: 127.0.0.1:%d\n", c.grpcPort, c.httpPort)
	fmt.Fprintf(&b, "processors:\n  batch:\n    send_batch_size: %d\n    timeout: %s\n", c.cfg.Batch.SendBatchSize, c.cfg.Batch.Timeout.D())
	b.WriteString("exporters:\n")
	endpoint := c.sink
	if c.cfg.Exporter == "otlphttp" {
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
	} else {
		endpoint = hostPort(endpoint)
	}
	for i := 0; i < c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "  %s/%d:\n    endpoint: %s\n", c.cfg.Exporter, i, endpoint)
		if c.cfg.Exporter == "otlp" {
			b.WriteString("    tls:\n      insecure: true\n")
		}
		fmt.Fprintf(&b, "    sending_queue:\n      enabled: true\n      queue_size: %d\n      num_consumers: %d\n", c.cfg.QueueSize, c.cfg.NumConsumers)
		r := c.cfg.Retry
		fmt.Fprintf(&b, "    retry_on_failure:\n      enabled: %t\n      initial_interval: %s\n      max_interval: %s\n      max_elapsed_time: %s\n",
			r.Enabled, r.InitialInterval.D(), r.MaxInterval.D(), r.MaxElapsedTime.D())
	}
	fmt.Fprintf(&b, "service:\n  telemetry:\n    logs:\n      level: warn\n    metrics:\n      level: detailed\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: %d\n", c.metricsP)
	b.WriteString("  pipelines:\n")
	for i := 0; i < c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "    %s/%d:\n      receivers: [otlp]\n      processors: [batch]\n      exporters: [%s/%d]\n", c.cfg.Signal, i, c.cfg.Exporter, i)
	}
	return b.String()
}

// Start writes the configuration, starts the child and waits until its
// OTLP port and metrics endpoint answer.
func (c *Collector) Start(ctx context.Context) error {
	var err error
	for _, p := range []*int{&c.grpcPort, &c.httpPort, &c.metricsP} {
		if *p, err = freePort(); err != nil {
			return err
		}
	}
	path := c.cfg.ConfigFile
	if path == "" {
		path = filepath.Join(c.dir, "otelcol.yaml")
		if err := os.WriteFile(path, []byte(c.YAML()), 0o644); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the pipebench binary to run the collector: %w", err)
	}
	c.logPath = filepath.Join(c.dir, "otelcol.log")
	logf, err := os.Create(c.logPath)
	if err != nil {
		return err
	}
	c.cmd = exec.Command(exe)
	c.cmd.Env = append(os.Environ(), ChildEnv+"="+path,
		"PIPEBENCH_OTLP_GRPC=127.0.0.1:"+strconv.Itoa(c.grpcPort), "PIPEBENCH_OTLP_HTTP=127.0.0.1:"+strconv.Itoa(c.httpPort),
		"PIPEBENCH_SINK="+c.sink, "PIPEBENCH_METRICS_PORT="+strconv.Itoa(c.metricsP))
	if c.cfg.GoMemLimit != "" {
		c.cmd.Env = append(c.cmd.Env, "GOMEMLIMIT="+c.cfg.GoMemLimit)
	}
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start the collector: %w", err)
	}
	c.exited = make(chan error, 1)
	go func() { c.exited <- c.cmd.Wait(); logf.Close() }()
	deadline := time.Now().Add(c.cfg.StartTimeout.D())
	for time.Now().Before(deadline) {
		select {
		case err := <-c.exited:
			c.exited <- err
			return fmt.Errorf("the collector exited while starting (%v); its log:\n%s", err, c.tail())
		case <-ctx.Done():
			c.Shutdown(context.Background())
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if c.ready() {
			return nil
		}
	}
	c.Shutdown(context.Background())
	return fmt.Errorf("the collector did not come up within %s; its log:\n%s", c.cfg.StartTimeout, c.tail())
}

func (c *Collector) ready() bool {
	conn, err := net.DialTimeout("tcp", c.Endpoint(), 200*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	resp, err := http.Get(c.MetricsURL())
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tail returns the last lines of the child's log.
func (c *Collector) tail() string {
	f, err := os.Open(c.logPath)
	if err != nil {
		return "(no log)"
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, "  "+sc.Text())
		if len(lines) > 20 {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// Endpoint is the OTLP gRPC receiver, host:port.
func (c *Collector) Endpoint() string { return "127.0.0.1:" + strconv.Itoa(c.grpcPort) }

// HTTPEndpoint is the OTLP HTTP receiver's base URL.
func (c *Collector) HTTPEndpoint() string { return "http://127.0.0.1:" + strconv.Itoa(c.httpPort) }

// Endpoints implements pipebench.MultiEndpoint: the receiver's "grpc"
// host:port and "http" base URL. Valid after Start.
func (c *Collector) Endpoints() map[string]string {
	return map[string]string{"grpc": c.Endpoint(), "http": c.HTTPEndpoint()}
}

// MetricsURL is the collector's own Prometheus endpoint.
func (c *Collector) MetricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(c.metricsP) + "/metrics"
}

// Instances implements pipebench.SUT.
func (c *Collector) Instances() []pipebench.Instance {
	pid := 0
	if c.cmd != nil && c.cmd.Process != nil {
		pid = c.cmd.Process.Pid
	}
	return []pipebench.Instance{{Name: "collector-0", PID: pid, MetricsURL: c.MetricsURL()}}
}

// Shutdown sends SIGTERM, waits (bounded by ctx, at most 15 s), then kills.
func (c *Collector) Shutdown(ctx context.Context) error {
	if c.cmd == nil || c.cmd.Process == nil {
		return nil
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	wait, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	select {
	case <-c.exited:
		return nil
	case <-wait.Done():
		c.cmd.Process.Kill()
		<-c.exited
		return errors.New("the collector did not stop on SIGTERM and was killed")
	}
}
