// Package otelcol runs a real OpenTelemetry Collector (0.162, built from the
// collector's own modules) as the embedded system under test: the pipebench
// binary re-executes itself as a child process, so the collector's memory
// and CPU are measured apart from the generator's. The collector receives
// OTLP, batches, and exports with a sending queue and retry_on_failure to
// pipebench's sink; its own metrics are served on a Prometheus endpoint.
package otelcol

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
	"github.com/pipebench/pipebench/internal/childproc"
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
	// times). They are named p1, p2, ... (pipeline traces/p1, exporter
	// otlp/p1); with more than one, each exporter adds the header
	// x-pipebench-pipeline: pN, by which the sink keeps each pipeline's
	// account apart (delivered, lost, duplicates, e2e latency per
	// pipeline) and a fault policy can hit one pipeline (faults:
	// {pipeline: p2, ...}).
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
	// Replicas is the number of collector processes, each with its own
	// receiver, queue and metrics endpoint, all exporting to the sink: the
	// reference's gateway runs 2. The SUT's endpoints then list every
	// replica, comma-separated, and the otlp driver spreads its
	// connections over them round-robin, as a Kubernetes Service spreads
	// connections over pods.
	Replicas int `yaml:"replicas" json:"replicas"`
}

// maxReplicas bounds replicas: each is a process of its own.
const maxReplicas = 16

func defaultConfig() *Config {
	return &Config{Pipelines: 1, Signal: "traces", Exporter: "otlp", QueueSize: 1000, NumConsumers: 10,
		Retry:        Retry{Enabled: true, InitialInterval: pipebench.Duration(time.Second), MaxInterval: pipebench.Duration(5 * time.Second), MaxElapsedTime: pipebench.Duration(5 * time.Minute)},
		Batch:        Batch{SendBatchSize: 8192, Timeout: pipebench.Duration(200 * time.Millisecond)},
		StartTimeout: pipebench.Duration(60 * time.Second), Replicas: 1}
}

// PipelineNames returns the names the generated configuration's exporters
// send in the x-pipebench-pipeline header (p1 ... pN; none with one
// pipeline), and false when the collector runs from config_file, whose
// pipelines pipebench does not know.
func (c *Config) PipelineNames() ([]string, bool) {
	if c.ConfigFile != "" {
		return nil, false
	}
	if c.Pipelines < 2 {
		return nil, true
	}
	names := make([]string, c.Pipelines)
	for i := range names {
		names[i] = "p" + strconv.Itoa(i+1)
	}
	return names, true
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
	if c.Replicas < 1 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("replicas: %d is outside 1..%d", c.Replicas, maxReplicas))
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
	if strings.HasPrefix(e, "unix://") {
		return e // a sink on a Unix socket: the exporter dials it as it is
	}
	if i := strings.Index(e, "://"); i >= 0 {
		e = strings.TrimSuffix(e[i+3:], "/")
	}
	return e
}

// Collector is the running set of collector processes (one per replica).
// Start once, Shutdown once.
type Collector struct {
	cfg      Config
	sink     string // the exporter's endpoint: host:port for otlp, a URL for otlphttp
	dir      string
	replicas []*replica
}

// replica is one collector child process.
type replica struct {
	index                        int
	grpcPort, httpPort, metricsP int
	proc                         *childproc.Proc
}

var (
	_ pipebench.SUT           = (*Collector)(nil)
	_ pipebench.MultiEndpoint = (*Collector)(nil)
)

func freePort() (int, error) { return childproc.FreePort() }

// YAML returns the generated configuration of the first replica (every
// replica's differs only in its ports).
func (c *Collector) YAML() string {
	if len(c.replicas) == 0 {
		return c.yamlFor(&replica{})
	}
	return c.yamlFor(c.replicas[0])
}

// yamlFor returns the generated configuration of replica r.
func (c *Collector) yamlFor(r *replica) string {
	var b strings.Builder
	fmt.Fprintf(&b, "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:%d\n      http:\n        endpoint: 127.0.0.1:%d\n", r.grpcPort, r.httpPort)
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
	for i := 1; i <= c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "  %s/p%d:\n    endpoint: %s\n", c.cfg.Exporter, i, endpoint)
		if c.cfg.Exporter == "otlp" {
			b.WriteString("    tls:\n      insecure: true\n")
		}
		if c.cfg.Pipelines > 1 {
			fmt.Fprintf(&b, "    headers:\n      %s: p%d\n", pipebench.PipelineHeader, i)
		}
		fmt.Fprintf(&b, "    sending_queue:\n      enabled: true\n      queue_size: %d\n      num_consumers: %d\n", c.cfg.QueueSize, c.cfg.NumConsumers)
		rt := c.cfg.Retry
		fmt.Fprintf(&b, "    retry_on_failure:\n      enabled: %t\n      initial_interval: %s\n      max_interval: %s\n      max_elapsed_time: %s\n",
			rt.Enabled, rt.InitialInterval.D(), rt.MaxInterval.D(), rt.MaxElapsedTime.D())
	}
	fmt.Fprintf(&b, "service:\n  telemetry:\n    logs:\n      level: warn\n    metrics:\n      level: detailed\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: %d\n", r.metricsP)
	b.WriteString("  pipelines:\n")
	for i := 1; i <= c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "    %s/p%d:\n      receivers: [otlp]\n      processors: [batch]\n      exporters: [%s/p%d]\n", c.cfg.Signal, i, c.cfg.Exporter, i)
	}
	return b.String()
}

// Start starts every replica, one after the other, and returns once each
// one's OTLP port and metrics endpoint answer. If one fails, those already
// started are stopped.
func (c *Collector) Start(ctx context.Context) error {
	n := max(c.cfg.Replicas, 1)
	for i := 0; i < n; i++ {
		r := &replica{index: i}
		c.replicas = append(c.replicas, r)
		err := c.start(ctx, r)
		// The ports are free when chosen, but another process may take
		// one before the collector binds it: choose again.
		for try := 0; try < 3 && err != nil && strings.Contains(err.Error(), "address already in use"); try++ {
			r.proc.Kill()
			*r = replica{index: i}
			err = c.start(ctx, r)
		}
		if err != nil {
			c.Shutdown(context.Background())
			if n > 1 {
				return fmt.Errorf("replica %d of %d: %w", i, n, err)
			}
			return err
		}
	}
	return nil
}

// start writes replica r's configuration, starts its child and waits
// until its OTLP port and metrics endpoint answer.
func (c *Collector) start(ctx context.Context, r *replica) error {
	var err error
	for _, p := range []*int{&r.grpcPort, &r.httpPort, &r.metricsP} {
		if *p, err = freePort(); err != nil {
			return err
		}
	}
	suffix := ""
	if r.index > 0 {
		suffix = "-" + strconv.Itoa(r.index)
	}
	path := c.cfg.ConfigFile
	if path == "" {
		path = filepath.Join(c.dir, "otelcol"+suffix+".yaml")
		if err := os.WriteFile(path, []byte(c.yamlFor(r)), 0o644); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the pipebench binary to run the collector: %w", err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), ChildEnv+"="+path,
		"PIPEBENCH_OTLP_GRPC=127.0.0.1:"+strconv.Itoa(r.grpcPort), "PIPEBENCH_OTLP_HTTP=127.0.0.1:"+strconv.Itoa(r.httpPort),
		"PIPEBENCH_SINK="+c.sink, "PIPEBENCH_METRICS_PORT="+strconv.Itoa(r.metricsP))
	if c.cfg.GoMemLimit != "" {
		cmd.Env = append(cmd.Env, "GOMEMLIMIT="+c.cfg.GoMemLimit)
	}
	if r.proc, err = childproc.Start("collector-"+strconv.Itoa(r.index), cmd, filepath.Join(c.dir, "otelcol"+suffix+".log")); err != nil {
		return err
	}
	return r.proc.WaitReady(ctx, c.cfg.StartTimeout.D(), r.ready)
}

func (r *replica) ready() bool {
	conn, err := net.DialTimeout("tcp", r.endpoint(), 200*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	resp, err := http.Get(r.metricsURL())
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// tail returns the last lines of the child's log.

func (r *replica) endpoint() string     { return "127.0.0.1:" + strconv.Itoa(r.grpcPort) }
func (r *replica) httpEndpoint() string { return "http://127.0.0.1:" + strconv.Itoa(r.httpPort) }
func (r *replica) metricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(r.metricsP) + "/metrics"
}

// each joins f over the replicas with commas.
func (c *Collector) each(f func(r *replica) string) string {
	parts := make([]string, len(c.replicas))
	for i, r := range c.replicas {
		parts[i] = f(r)
	}
	return strings.Join(parts, ",")
}

// Endpoint is the OTLP gRPC receiver, host:port; with several replicas,
// every replica's, comma-separated ("127.0.0.1:A,127.0.0.1:B"), which the
// otlp driver spreads its connections over.
func (c *Collector) Endpoint() string { return c.each((*replica).endpoint) }

// HTTPEndpoint is the OTLP HTTP receiver's base URL; with several
// replicas, every replica's, comma-separated.
func (c *Collector) HTTPEndpoint() string { return c.each((*replica).httpEndpoint) }

// Endpoints implements pipebench.MultiEndpoint: the receivers' "grpc"
// host:port and "http" base URL, comma-separated when there are several
// replicas. Valid after Start.
func (c *Collector) Endpoints() map[string]string {
	return map[string]string{"grpc": c.Endpoint(), "http": c.HTTPEndpoint()}
}

// MetricsURL is the first replica's own Prometheus endpoint.
func (c *Collector) MetricsURL() string {
	if len(c.replicas) == 0 {
		return ""
	}
	return c.replicas[0].metricsURL()
}

// Instances implements pipebench.SUT: one per replica, collector-0,
// collector-1, and so on, each with its PID and metrics endpoint.
func (c *Collector) Instances() []pipebench.Instance {
	var in []pipebench.Instance
	for _, r := range c.replicas {
		in = append(in, pipebench.Instance{Name: "collector-" + strconv.Itoa(r.index), PID: r.proc.PID(), MetricsURL: r.metricsURL()})
	}
	return in
}

// Shutdown sends SIGTERM to every replica, waits (bounded by ctx, at most
// 15 s), then kills those still running.
func (c *Collector) Shutdown(ctx context.Context) error {
	procs := make([]*childproc.Proc, len(c.replicas))
	for i, r := range c.replicas {
		procs[i] = r.proc
	}
	return childproc.Stop(ctx, procs...)
}
