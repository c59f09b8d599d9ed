// Package otelcol runs a real OpenTelemetry Collector (0.161, built from the
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
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/proc/childproc"
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

// Receivers the embedded collector can run.
const (
	ReceiverOTLP       = "otlp"       // a gateway: drivers push OTLP
	ReceiverPrometheus = "prometheus" // a metric agent scraping pipebench's producers
	ReceiverFilelog    = "filelog"    // a log agent tailing pipebench's log files
)

// Config configures the embedded collector.
type Config struct {
	// Receiver is otlp (a gateway receiving OTLP, the default),
	// prometheus (a metric agent: the prometheus receiver scrapes the
	// prometheus-producers driver, by pod and by service) or filelog (a
	// log agent: the filelog receiver tails the logfile driver's files,
	// its read offsets and its exporter's sending queue kept on disk by
	// the file_storage extension).
	Receiver string `yaml:"receiver" json:"receiver"`
	// Pipelines fed by the one receiver, each exporting to the sink (the
	// reference's multi-pipeline case is 3: every item then arrives 3
	// times). They are named p1, p2, ... (pipeline traces/p1, exporter
	// otlp/p1); with more than one, each exporter adds the header
	// x-pipebench-pipeline: pN, by which the sink keeps each pipeline's
	// account apart (delivered, lost, duplicates, e2e latency per
	// pipeline) and a fault policy can hit one pipeline (faults:
	// {pipeline: p2, ...}).
	Pipelines int `yaml:"pipelines" json:"pipelines"`
	// Signal is traces, metrics or logs (prometheus: metrics, filelog:
	// logs, whatever is written).
	Signal string `yaml:"signal" json:"signal"`
	// Exporter is otlp (gRPC), otlphttp, or prometheusremotewrite (to
	// the prometheus-remote-write sink, which matches a metric agent's
	// tracer samples). An agent with a gateway exports to it with otlp or
	// otlphttp.
	Exporter     string `yaml:"exporter" json:"exporter"`
	QueueSize    int    `yaml:"queue_size" json:"queue_size"`
	NumConsumers int    `yaml:"num_consumers" json:"num_consumers"`
	// QueueSizer is what queue_size and the collector's own
	// otelcol_exporter_queue_size count: requests (the collector's
	// default: batches of any size) or items (spans, metric points, log
	// records). The run's ledger reads what the collector holds in items
	// either way, from its counters.
	QueueSizer string `yaml:"queue_sizer" json:"queue_sizer,omitempty"`
	// PersistentQueue keeps each exporter's sending queue on disk (the
	// file_storage extension, in the run's folder) instead of in memory;
	// the filelog receiver's default.
	PersistentQueue *bool `yaml:"persistent_queue" json:"persistent_queue,omitempty"`
	Retry           Retry `yaml:"retry_on_failure" json:"retry_on_failure"`
	Batch           Batch `yaml:"batch" json:"batch"`
	// Env is set in the environment of every collector process, on top
	// of pipebench's own ({GOMEMLIMIT: 400MiB, GOGC: "50"}: the
	// reference's "0.97 w. GOMEMLIMIT" rows).
	Env map[string]string `yaml:"env" json:"env,omitempty"`
	// GOMEMLIMIT for the child, e.g. "400MiB" ("" = unset); the same as
	// env: {GOMEMLIMIT: ...}.
	GoMemLimit string `yaml:"gomemlimit" json:"gomemlimit,omitempty"`
	// Prometheus configures the prometheus receiver (receiver:
	// prometheus).
	Prometheus Scrape `yaml:"prometheus" json:"prometheus"`
	// Filelog configures the filelog receiver (receiver: filelog).
	Filelog Filelog `yaml:"filelog" json:"filelog"`
	// Gateway, for an agent (receiver prometheus or filelog), puts a
	// gateway collector (otlp receiver, batch, the same exporter, queue
	// and retry settings) between the agent and the sink, as the
	// reference's metric agent exports to the metric gateway: the sink's
	// faults then back up the gateway, and the agent's own KPIs show what
	// it sees. The gateway is not one of the instances observed.
	Gateway bool `yaml:"gateway" json:"gateway,omitempty"`
	// GatewayExporter is how the gateway exports to the sink: otlp,
	// otlphttp or prometheusremotewrite (default: exporter).
	GatewayExporter string `yaml:"gateway_exporter" json:"gateway_exporter,omitempty"`
	// ConfigFile runs your own collector YAML instead of the generated
	// one (a relative path is read from the scenario file's folder;
	// ${env:VAR} and ${VAR} are expanded; components: the otlp,
	// prometheus and filelog receivers, the batch, memory_limiter,
	// resource, attributes, filter, transform, span and tail_sampling
	// processors, the otlp, otlphttp and prometheusremotewrite exporters,
	// file_storage; validate names any other); it must receive OTLP gRPC on ${env:PIPEBENCH_OTLP_GRPC} (and
	// OTLP/HTTP on ${env:PIPEBENCH_OTLP_HTTP}, if drivers send HTTP),
	// export to ${env:PIPEBENCH_SINK} (host:port for the otlp exporter, a
	// URL for otlphttp, as the exporter setting picks) and serve metrics
	// on ${env:PIPEBENCH_METRICS_PORT}.
	ConfigFile string `yaml:"config_file" json:"config_file,omitempty"`
	// Command runs this collector binary instead of the embedded one
	// (otelcol-contrib, your own distribution), as COMMAND --config
	// CONFIG_FILE with the same ports in its environment and the same
	// observers; it needs config_file. A relative path with a slash is read
	// from the scenario file's folder; a bare name is looked up in PATH.
	Command string `yaml:"command" json:"command,omitempty"`
	// StartTimeout bounds the wait for the collector to come up.
	StartTimeout pipebench.Duration `yaml:"start_timeout" json:"start_timeout"`
	// Replicas is the number of collector processes, each with its own
	// receiver, queue and metrics endpoint, all exporting to the sink: the
	// reference's gateway runs 2. The SUT's endpoints then list every
	// replica, comma-separated, and the otlp driver spreads its
	// connections over them round-robin, as a Kubernetes Service spreads
	// connections over pods. A metric agent's replicas split the
	// producers between them (replica i scrapes producers i, i+N, ...), as
	// a DaemonSet's agents each scrape their own node's pods; a log agent
	// runs one replica.
	Replicas int `yaml:"replicas" json:"replicas"`
}

// Scrape configures the prometheus receiver of a metric agent. It has two
// scrape configurations, as the reference's agent has: app-pods scrapes
// the even-numbered producers one by one (as pods annotated for
// scraping), app-services the odd-numbered ones (as the endpoints behind
// an annotated Service), both found by HTTP service discovery at the
// prometheus-producers driver's /targets.
type Scrape struct {
	// Interval between two scrapes of one target (the reference's 20
	// producers x 1,000 metrics x 10 series every 10 s is its 20,000
	// metric points/s).
	Interval pipebench.Duration `yaml:"scrape_interval" json:"scrape_interval"`
	// Timeout of one scrape (at most the interval).
	Timeout pipebench.Duration `yaml:"scrape_timeout" json:"scrape_timeout"`
	// Refresh is how often service discovery asks for targets.
	Refresh pipebench.Duration `yaml:"refresh_interval" json:"refresh_interval"`
	// Jobs are the scrape configurations: pods, services, or both (the
	// default); with one, it scrapes every producer.
	Jobs []string `yaml:"jobs" json:"jobs,omitempty"`
}

// Filelog configures the filelog receiver of a log agent.
type Filelog struct {
	// Include are the glob patterns of the files tailed; empty: *.log in
	// the folder the logfile driver writes (the system's endpoint).
	Include []string `yaml:"include" json:"include,omitempty"`
	// PollInterval is how often the receiver looks for new lines.
	PollInterval pipebench.Duration `yaml:"poll_interval" json:"poll_interval"`
	// MaxConcurrentFiles bounds the files read at once.
	MaxConcurrentFiles int `yaml:"max_concurrent_files" json:"max_concurrent_files"`
	// Sequence parses each line's pb_seq and pb_sent into the record's
	// attributes pb.seq and pb.sent (a regex_parser and two add
	// operators), so the sink counts delivered, lost and duplicated lines
	// and their end-to-end latency; false leaves records as read.
	Sequence *bool `yaml:"sequence" json:"sequence,omitempty"`
}

var _ pipebench.CommandSetter = (*Config)(nil)

// SetCommand runs the collector binary path instead of the embedded one
// (command:), as a suite's builds do; it needs config_file.
func (c *Config) SetCommand(path string) error {
	if c.ConfigFile == "" {
		return fmt.Errorf("command: runs your collector with your configuration: give config_file in the scenario")
	}
	if _, err := exec.LookPath(path); err != nil {
		return fmt.Errorf("command: %s is not an executable file (a path, or a name found in PATH)", path)
	}
	c.Command = path
	return nil
}

// maxReplicas bounds replicas: each is a process of its own.
const maxReplicas = 16

func defaultConfig() *Config {
	return &Config{Receiver: ReceiverOTLP, Pipelines: 1, Signal: "traces", Exporter: "otlp", QueueSize: 1000, NumConsumers: 10,
		Retry:        Retry{Enabled: true, InitialInterval: pipebench.Duration(time.Second), MaxInterval: pipebench.Duration(5 * time.Second), MaxElapsedTime: pipebench.Duration(5 * time.Minute)},
		Batch:        Batch{SendBatchSize: 8192, Timeout: pipebench.Duration(200 * time.Millisecond)},
		Prometheus:   Scrape{Interval: pipebench.Duration(10 * time.Second), Refresh: pipebench.Duration(time.Second), Jobs: []string{JobPods, JobServices}},
		Filelog:      Filelog{PollInterval: pipebench.Duration(200 * time.Millisecond), MaxConcurrentFiles: 1024},
		StartTimeout: pipebench.Duration(60 * time.Second), Replicas: 1}
}

// ExporterRemoteWrite is the prometheusremotewrite exporter.
const ExporterRemoteWrite = "prometheusremotewrite"

var exporters = map[string]bool{"otlp": true, "otlphttp": true, ExporterRemoteWrite: true}

// sinkExporter is the exporter that sends to the sink: the gateway's, for
// an agent with a gateway.
func (c *Config) sinkExporter() string {
	if c.Gateway && c.GatewayExporter != "" {
		return c.GatewayExporter
	}
	return c.Exporter
}

// The scrape configurations of a metric agent.
const (
	JobPods     = "pods"
	JobServices = "services"
)

// signal is the signal the collector's pipelines carry.
func (c *Config) signal() string {
	switch c.Receiver {
	case ReceiverPrometheus:
		return "metrics"
	case ReceiverFilelog:
		return "logs"
	}
	return c.Signal
}

// persistent tells whether the sending queue is on disk.
func (c *Config) persistent() bool {
	if c.PersistentQueue != nil {
		return *c.PersistentQueue
	}
	return c.Receiver == ReceiverFilelog
}

// sequence tells whether a log agent parses pb_seq and pb_sent.
func (c *Config) sequence() bool { return c.Filelog.Sequence == nil || *c.Filelog.Sequence }

// env is every variable set for the collector processes, GOMEMLIMIT
// included.
func (c *Config) env() []string {
	var out []string
	if c.GoMemLimit != "" {
		out = append(out, "GOMEMLIMIT="+c.GoMemLimit)
	}
	keys := make([]string, 0, len(c.Env))
	for k := range c.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+c.Env[k])
	}
	return out
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
	switch c.Receiver {
	case ReceiverOTLP, ReceiverPrometheus, ReceiverFilelog:
	default:
		errs = append(errs, fmt.Errorf("receiver: %q is not otlp, prometheus or filelog", c.Receiver))
	}
	if c.Pipelines < 1 || c.Pipelines > 20 {
		errs = append(errs, fmt.Errorf("pipelines: %d is outside 1..20", c.Pipelines))
	}
	if c.Signal != "traces" && c.Signal != "metrics" && c.Signal != "logs" {
		errs = append(errs, fmt.Errorf("signal: %q is not traces, metrics or logs", c.Signal))
	}
	if !exporters[c.Exporter] {
		errs = append(errs, fmt.Errorf("exporter: %q is not otlp, otlphttp or prometheusremotewrite", c.Exporter))
	}
	if c.Exporter == ExporterRemoteWrite && c.signal() != "metrics" {
		errs = append(errs, fmt.Errorf("exporter: prometheusremotewrite exports metrics, and this collector's pipelines carry %s", c.signal()))
	}
	if c.Gateway && c.Exporter == ExporterRemoteWrite {
		errs = append(errs, fmt.Errorf("exporter: an agent exports to its gateway with otlp or otlphttp; give the gateway prometheusremotewrite with gateway_exporter"))
	}
	if c.GatewayExporter != "" && !exporters[c.GatewayExporter] {
		errs = append(errs, fmt.Errorf("gateway_exporter: %q is not otlp, otlphttp or prometheusremotewrite", c.GatewayExporter))
	}
	if c.GatewayExporter == ExporterRemoteWrite && c.signal() != "metrics" {
		errs = append(errs, fmt.Errorf("gateway_exporter: prometheusremotewrite exports metrics, and this collector's pipelines carry %s", c.signal()))
	}
	if c.GatewayExporter != "" && !c.Gateway {
		errs = append(errs, fmt.Errorf("gateway_exporter: set gateway: true as well"))
	}
	if c.Replicas < 1 || c.Replicas > maxReplicas {
		errs = append(errs, fmt.Errorf("replicas: %d is outside 1..%d", c.Replicas, maxReplicas))
	}
	if c.Receiver == ReceiverFilelog && c.Replicas > 1 {
		errs = append(errs, fmt.Errorf("replicas: a log agent runs one replica (it tails every producer's file), not %d", c.Replicas))
	}
	if c.Gateway && c.Receiver == ReceiverOTLP {
		errs = append(errs, fmt.Errorf("gateway: only an agent (receiver: prometheus or filelog) exports through a gateway; this collector is one"))
	}
	if c.QueueSize < 1 {
		errs = append(errs, fmt.Errorf("queue_size: must be at least 1"))
	}
	if c.QueueSizer != "" && c.QueueSizer != "requests" && c.QueueSizer != "items" {
		errs = append(errs, fmt.Errorf("queue_sizer: %q is not requests or items", c.QueueSizer))
	}
	if c.QueueSizer != "" && c.sinkExporter() == ExporterRemoteWrite && !c.Gateway {
		errs = append(errs, fmt.Errorf("queue_sizer: the prometheusremotewrite exporter's own queue counts requests only"))
	}
	if c.NumConsumers < 1 {
		errs = append(errs, fmt.Errorf("num_consumers: must be at least 1"))
	}
	for k := range c.Env {
		if !envName(k) {
			errs = append(errs, fmt.Errorf("env: %q is not an environment variable name (letters, digits and _, not starting with a digit)", k))
		} else if strings.HasPrefix(k, "PIPEBENCH_") {
			errs = append(errs, fmt.Errorf("env: %s: PIPEBENCH_ variables are pipebench's own (the collector's ports, sink and configuration)", k))
		}
	}
	if _, ok := c.Env["GOMEMLIMIT"]; ok && c.GoMemLimit != "" {
		errs = append(errs, fmt.Errorf("gomemlimit: give GOMEMLIMIT once, in env or in gomemlimit"))
	}
	p := c.Prometheus
	if p.Interval.D() < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("prometheus.scrape_interval: must be at least 100ms"))
	}
	if p.Timeout < 0 || p.Timeout > p.Interval {
		errs = append(errs, fmt.Errorf("prometheus.scrape_timeout: must be at most scrape_interval (%s)", p.Interval.D()))
	}
	if p.Refresh.D() < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("prometheus.refresh_interval: must be at least 100ms"))
	}
	if len(p.Jobs) == 0 {
		errs = append(errs, fmt.Errorf("prometheus.jobs: give pods, services or both"))
	}
	for _, j := range p.Jobs {
		if j != JobPods && j != JobServices {
			errs = append(errs, fmt.Errorf("prometheus.jobs: %q is not pods or services", j))
		}
	}
	if c.Filelog.PollInterval.D() < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("filelog.poll_interval: must be at least 10ms"))
	}
	if c.Filelog.MaxConcurrentFiles < 2 {
		errs = append(errs, fmt.Errorf("filelog.max_concurrent_files: must be at least 2"))
	}
	if c.ConfigFile != "" {
		if _, err := readConfigFile(c.ConfigFile); err != nil {
			errs = append(errs, fmt.Errorf("config_file: %w", err))
		} else if cs := checkComponents(c.ConfigFile); c.Command == "" && len(cs) > 0 {
			// A component the embedded collector lacks, named with what
			// it has, before its own dry run's words.
			errs = append(errs, cs...)
		} else if err := c.checkConfigFile(); err != nil {
			errs = append(errs, fmt.Errorf("config_file: %w", err))
		}
	}
	if c.Command != "" {
		if c.ConfigFile == "" {
			errs = append(errs, fmt.Errorf("command: runs your collector with your configuration: give config_file too"))
		}
		if _, err := exec.LookPath(c.Command); err != nil {
			errs = append(errs, fmt.Errorf("command: %s is not an executable file (a path, or a name found in PATH)", c.Command))
		}
	}
	return errors.Join(errs...)
}

// envName tells whether k is a portable environment variable name.
func envName(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// Factory returns the factory of the "otelcol" SUT. The collector exports
// to the sink's endpoint for its exporter's protocol: Env.Targets["grpc"]
// for otlp and Env.Targets["http"] for otlphttp, else Env.Target when it
// is of that protocol (a URL for otlphttp, host:port for otlp).
func Factory() pipebench.Factory[pipebench.SUT] {
	return pipebench.NewFactory("otelcol", "a real OpenTelemetry Collector "+CollectorVersion+" as a child process: a gateway (otlp -> batch -> otlp/otlphttp exporter with queue and retry), a metric agent (prometheus receiver) or a log agent (filelog receiver, file_storage)",
		defaultConfig, func(c *Config, env pipebench.Env) (pipebench.SUT, error) {
			sink, err := sinkEndpoint(c.sinkExporter(), env)
			if err != nil && c.ConfigFile == "" {
				return nil, err // your own configuration may export elsewhere
			}
			return newCollector(*c, sink, env.ScratchDir(), ""), nil
		})
}

// newCollector returns the collector of cfg exporting to sink, its files
// in dir named with prefix ("" or "gateway-").
func newCollector(cfg Config, sink, dir, prefix string) *Collector {
	c := &Collector{cfg: cfg, sink: sink, dir: dir, prefix: prefix}
	if cfg.Gateway {
		gw := cfg
		gw.Receiver, gw.Gateway, gw.Replicas, gw.Signal = ReceiverOTLP, false, 1, cfg.signal()
		gw.Exporter, gw.GatewayExporter, gw.PersistentQueue = cfg.sinkExporter(), "", nil
		c.gateway = &Collector{cfg: gw, sink: sink, dir: dir, prefix: "gateway-"}
	}
	return c
}

// sinkEndpoint picks where the exporter sends: a base URL for otlphttp,
// host:port for otlp.
func sinkEndpoint(exporter string, env pipebench.Env) (string, error) {
	if env.Target == "" && len(env.Targets) == 0 {
		return "", pipebench.UsageError("the collector has nowhere to export to", "add a sink: {type: otlp} to the scenario", nil)
	}
	if exporter == ExporterRemoteWrite {
		if strings.HasPrefix(env.Target, "http://") || strings.HasPrefix(env.Target, "https://") {
			return env.Target, nil
		}
		return "", pipebench.UsageError(fmt.Sprintf("exporter: prometheusremotewrite needs a remote-write URL, and the sink gave %q", env.Target),
			"use sink: {type: prometheus-remote-write}", nil)
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

// Collector is the running set of collector processes (one per replica),
// and an agent's gateway. Start once, Shutdown once.
type Collector struct {
	cfg      Config
	sink     string // the exporter's endpoint: host:port for otlp, a URL for otlphttp
	dir      string
	prefix   string // of file names: "" or "gateway-"
	replicas []*replica
	// producersPort is where a metric agent's producers are served (the
	// prometheus-producers driver listens there).
	producersPort int
	gateway       *Collector
	// lines counts the lines written to a log agent's files (Ledger).
	lines lineCounter
}

// replica is one collector child process.
type replica struct {
	index                        int
	grpcPort, httpPort, metricsP int
	proc                         *childproc.Proc
	// sidecar serves a log agent's metrics: the collector's own and its
	// pod's file and disk numbers (agent.go).
	sidecar *sidecar
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

// LogDir is the folder a log agent tails (the logfile driver writes
// there); "" for other collectors.
func (c *Collector) LogDir() string {
	if c.cfg.Receiver != ReceiverFilelog {
		return ""
	}
	if len(c.cfg.Filelog.Include) > 0 {
		return filepath.Dir(c.cfg.Filelog.Include[0])
	}
	return filepath.Join(c.dir, "logs")
}

// StorageDir is the folder of replica i's file_storage (a log agent's read
// offsets, and every persistent sending queue): the agent's filesystem
// buffer.
func (c *Collector) StorageDir(i int) string {
	return filepath.Join(c.dir, c.prefix+"otelcol-storage"+suffix(i))
}

func suffix(i int) string {
	if i == 0 {
		return ""
	}
	return "-" + strconv.Itoa(i)
}

// Start starts the gateway, if any, then every replica, one after the
// other, and returns once each one receives (a gateway's OTLP port, and
// every replica's metrics endpoint, answer). If one fails, those already
// started are stopped.
func (c *Collector) Start(ctx context.Context) error {
	if c.gateway != nil {
		if err := c.gateway.Start(ctx); err != nil {
			return fmt.Errorf("gateway: %w", err)
		}
		if c.cfg.Exporter == "otlphttp" {
			c.sink = c.gateway.replicas[0].httpEndpoint()
		} else {
			c.sink = c.gateway.replicas[0].endpoint()
		}
	}
	if c.cfg.Receiver == ReceiverPrometheus {
		var err error
		if c.producersPort, err = freePort(); err != nil {
			c.Shutdown(context.Background())
			return err
		}
	}
	if c.cfg.Receiver == ReceiverFilelog {
		if err := os.MkdirAll(c.LogDir(), 0o755); err != nil {
			c.Shutdown(context.Background())
			return fmt.Errorf("the log agent's folder: %w", err)
		}
	}
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
// until its OTLP port (a gateway's) and metrics endpoint answer.
func (c *Collector) start(ctx context.Context, r *replica) error {
	var err error
	for _, p := range []*int{&r.grpcPort, &r.httpPort, &r.metricsP} {
		if *p, err = freePort(); err != nil {
			return err
		}
	}
	sfx := suffix(r.index)
	if c.usesStorage() {
		if err := os.MkdirAll(c.StorageDir(r.index), 0o755); err != nil {
			return fmt.Errorf("the collector's storage folder: %w", err)
		}
	}
	var path string
	if c.cfg.ConfigFile != "" {
		if path, err = c.copyConfigFile(sfx); err != nil {
			return fmt.Errorf("config_file: %w", err)
		}
	} else {
		path = filepath.Join(c.dir, c.prefix+"otelcol"+sfx+".yaml")
		if err := os.WriteFile(path, []byte(c.yamlFor(r)), 0o644); err != nil {
			return err
		}
	}
	// A configuration of the core components only runs on the core
	// collector, which pipebench carries itself; any other on the full
	// one, in pipebench-sut.
	env := ChildEnv
	if data, err := os.ReadFile(path); err == nil && CoreOnly(data) {
		env = CoreChildEnv
	}
	var cmd *exec.Cmd
	if c.cfg.Command != "" {
		cmd = exec.Command(c.cfg.Command, "--config", path)
	} else {
		exe, err := childproc.Program(ctx, env)
		if err != nil {
			return fmt.Errorf("the embedded collector: %w", err)
		}
		cmd = exec.Command(exe)
	}
	cmd.Env = append(os.Environ(), env+"="+path,
		"PIPEBENCH_OTLP_GRPC=127.0.0.1:"+strconv.Itoa(r.grpcPort), "PIPEBENCH_OTLP_HTTP=127.0.0.1:"+strconv.Itoa(r.httpPort),
		"PIPEBENCH_SINK="+c.sink, "PIPEBENCH_METRICS_PORT="+strconv.Itoa(r.metricsP))
	cmd.Env = append(cmd.Env, c.cfg.env()...)
	if r.proc, err = childproc.Start(c.prefix+"collector-"+strconv.Itoa(r.index), cmd, filepath.Join(c.dir, c.prefix+"otelcol"+sfx+".log")); err != nil {
		return err
	}
	if err := r.proc.WaitReady(ctx, c.cfg.StartTimeout.D(), func() bool { return r.ready(c.cfg.Receiver == ReceiverOTLP) }); err != nil {
		return err
	}
	if c.cfg.Receiver == ReceiverFilelog {
		if r.sidecar, err = startSidecar(r.metricsURL(), r.proc.PID(), c.StorageDir(r.index), c.cfg.Exporter == "otlphttp"); err != nil {
			return err
		}
	}
	return nil
}

var _ pipebench.FilePaths = (*Config)(nil)

// RelativeTo reads a relative config_file from dir (the scenario's folder),
// and a relative command with a slash in it (a bare name is PATH's).
func (c *Config) RelativeTo(dir string) {
	c.ConfigFile = pipebench.InDir(dir, c.ConfigFile)
	if strings.ContainsRune(c.Command, filepath.Separator) {
		c.Command = pipebench.InDir(dir, c.Command)
	}
}

// usesStorage tells whether the collector runs the file_storage extension.
func (c *Collector) usesStorage() bool {
	return c.cfg.ConfigFile == "" && (c.cfg.Receiver == ReceiverFilelog || c.cfg.persistent())
}

// ready tells whether the replica's metrics endpoint, and with otlp its
// OTLP gRPC port, answer.
func (r *replica) ready(otlp bool) bool {
	if otlp && !childproc.Listening(r.endpoint()) {
		return false
	}
	return childproc.Answers(r.metricsURL(), http.StatusOK, 0)
}

func (r *replica) endpoint() string     { return "127.0.0.1:" + strconv.Itoa(r.grpcPort) }
func (r *replica) httpEndpoint() string { return "http://127.0.0.1:" + strconv.Itoa(r.httpPort) }
func (r *replica) metricsURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(r.metricsP) + "/metrics"
}

// observedURL is the metrics URL observers scrape: a log agent's sidecar,
// else the collector's own.
func (r *replica) observedURL() string {
	if r.sidecar != nil {
		return r.sidecar.url()
	}
	return r.metricsURL()
}

// each joins f over the replicas with commas.
func (c *Collector) each(f func(r *replica) string) string {
	parts := make([]string, len(c.replicas))
	for i, r := range c.replicas {
		parts[i] = f(r)
	}
	return strings.Join(parts, ",")
}

// Endpoint is where drivers send. A gateway: the OTLP gRPC receiver,
// host:port; with several replicas, every replica's, comma-separated
// ("127.0.0.1:A,127.0.0.1:B"), which the otlp driver spreads its
// connections over. A metric agent: the host:port its producers are
// scraped on (the prometheus-producers driver serves there). A log agent:
// the folder whose *.log files it tails (the logfile driver writes
// there).
func (c *Collector) Endpoint() string {
	switch c.cfg.Receiver {
	case ReceiverPrometheus:
		return c.producersAddr()
	case ReceiverFilelog:
		return c.LogDir()
	}
	return c.each((*replica).endpoint)
}

func (c *Collector) producersAddr() string { return "127.0.0.1:" + strconv.Itoa(c.producersPort) }

// HTTPEndpoint is the OTLP HTTP receiver's base URL; with several
// replicas, every replica's, comma-separated.
func (c *Collector) HTTPEndpoint() string { return c.each((*replica).httpEndpoint) }

// Endpoints implements pipebench.MultiEndpoint: a gateway's receivers,
// "grpc" host:port and "http" base URL, comma-separated when there are
// several replicas; an agent's "producers" (host:port) or "files" (a
// folder). Valid after Start.
func (c *Collector) Endpoints() map[string]string {
	switch c.cfg.Receiver {
	case ReceiverPrometheus:
		return map[string]string{"producers": c.producersAddr()}
	case ReceiverFilelog:
		return map[string]string{"files": c.LogDir()}
	}
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
// collector-1, and so on, each with its PID and metrics endpoint (a log
// agent's: its sidecar's, which serves the collector's own metrics and
// the agent's file and disk numbers). An agent's gateway is not among
// them.
func (c *Collector) Instances() []pipebench.Instance {
	var in []pipebench.Instance
	for _, r := range c.replicas {
		in = append(in, pipebench.Instance{Name: "collector-" + strconv.Itoa(r.index), PID: r.proc.PID(), MetricsURL: r.observedURL()})
	}
	return in
}

// Gateway returns an agent's gateway collector, or nil.
func (c *Collector) Gateway() *Collector { return c.gateway }

// Shutdown sends SIGTERM to every replica, waits (bounded by ctx, at most
// 15 s), then kills those still running; then the same for the gateway.
func (c *Collector) Shutdown(ctx context.Context) error {
	procs := make([]*childproc.Proc, len(c.replicas))
	for i, r := range c.replicas {
		procs[i] = r.proc
		if r.sidecar != nil {
			r.sidecar.close()
		}
	}
	err := childproc.Stop(ctx, procs...)
	if c.gateway != nil {
		err = errors.Join(err, c.gateway.Shutdown(ctx))
	}
	return err
}
