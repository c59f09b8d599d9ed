package otelcol

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
)

// yamlFor returns the generated configuration of replica r: its receiver
// (otlp, prometheus or filelog), the batch processor, one exporter per
// pipeline (with its sending queue, on disk when persistent, and its
// retries), the file_storage extension when anything is kept on disk, and
// the collector's own metrics on a Prometheus endpoint.
func (c *Collector) yamlFor(r *replica) string {
	var b strings.Builder
	receivers := c.writeReceivers(&b, r)
	processors := []string{"batch"}
	fmt.Fprintf(&b, "processors:\n  batch:\n    send_batch_size: %d\n    timeout: %s\n", c.cfg.Batch.SendBatchSize, c.cfg.Batch.Timeout.D())
	if c.usesStorage() {
		dir := c.StorageDir(r.index)
		fmt.Fprintf(&b, "extensions:\n  file_storage:\n    directory: %s\n    create_directory: true\n    compaction:\n      directory: %s\n      on_start: true\n      on_rebound: true\n", quote(dir), quote(dir))
	}
	b.WriteString("exporters:\n")
	endpoint := c.sink
	switch c.cfg.Exporter {
	case "otlphttp":
		if !strings.Contains(endpoint, "://") {
			endpoint = "http://" + endpoint
		}
	case "otlp":
		endpoint = hostPort(endpoint)
	}
	for i := 1; i <= c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "  %s/p%d:\n    endpoint: %s\n", c.cfg.Exporter, i, quote(endpoint))
		if c.cfg.Exporter == "otlp" {
			b.WriteString("    tls:\n      insecure: true\n")
		}
		if c.cfg.Pipelines > 1 {
			fmt.Fprintf(&b, "    headers:\n      %s: p%d\n", pipebench.PipelineHeader, i)
		}
		if c.cfg.Exporter == ExporterRemoteWrite {
			// Its own queue (the exporter keeps no sending_queue), and no
			// target_info series beside the points.
			fmt.Fprintf(&b, "    target_info:\n      enabled: false\n    remote_write_queue:\n      enabled: true\n      queue_size: %d\n      num_consumers: %d\n", c.cfg.QueueSize, c.cfg.NumConsumers)
		} else {
			fmt.Fprintf(&b, "    sending_queue:\n      enabled: true\n      queue_size: %d\n      num_consumers: %d\n", c.cfg.QueueSize, c.cfg.NumConsumers)
			if c.cfg.QueueSizer != "" {
				fmt.Fprintf(&b, "      sizer: %s\n", c.cfg.QueueSizer)
			}
			if c.cfg.persistent() {
				b.WriteString("      storage: file_storage\n")
			}
		}
		rt := c.cfg.Retry
		fmt.Fprintf(&b, "    retry_on_failure:\n      enabled: %t\n      initial_interval: %s\n      max_interval: %s\n      max_elapsed_time: %s\n",
			rt.Enabled, rt.InitialInterval.D(), rt.MaxInterval.D(), rt.MaxElapsedTime.D())
	}
	b.WriteString("service:\n")
	if c.usesStorage() {
		b.WriteString("  extensions: [file_storage]\n")
	}
	fmt.Fprintf(&b, "  telemetry:\n    logs:\n      level: warn\n    metrics:\n      level: detailed\n      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: %d\n", r.metricsP)
	b.WriteString("  pipelines:\n")
	for i := 1; i <= c.cfg.Pipelines; i++ {
		fmt.Fprintf(&b, "    %s/p%d:\n      receivers: [%s]\n      processors: [%s]\n      exporters: [%s/p%d]\n",
			c.cfg.signal(), i, strings.Join(receivers, ", "), strings.Join(processors, ", "), c.cfg.Exporter, i)
	}
	return b.String()
}

// writeReceivers writes the receivers section and returns the receivers'
// names.
func (c *Collector) writeReceivers(b *strings.Builder, r *replica) []string {
	b.WriteString("receivers:\n")
	switch c.cfg.Receiver {
	case ReceiverPrometheus:
		return c.writePrometheus(b, r)
	case ReceiverFilelog:
		c.writeFilelog(b)
		return []string{"filelog"}
	}
	fmt.Fprintf(b, "  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:%d\n      http:\n        endpoint: 127.0.0.1:%d\n", r.grpcPort, r.httpPort)
	return []string{"otlp"}
}

// writePrometheus writes one prometheus receiver per scrape
// configuration, as the reference's agent has: prometheus/app-pods and
// prometheus/app-services, each finding its producers by HTTP service
// discovery (role pod: the even-numbered producers, role service: the odd
// ones; with one configuration, all), replica i of N taking the producers
// whose number is i modulo N.
func (c *Collector) writePrometheus(b *strings.Builder, r *replica) []string {
	p := c.cfg.Prometheus
	timeout := p.Timeout.D()
	if timeout == 0 {
		timeout = p.Interval.D()
	}
	var names []string
	for _, job := range p.Jobs {
		name := "app-" + job
		q := "shard=" + strconv.Itoa(r.index) + "&shards=" + strconv.Itoa(max(c.cfg.Replicas, 1))
		if len(p.Jobs) > 1 {
			q += "&role=" + strings.TrimSuffix(job, "s")
		}
		fmt.Fprintf(b, "  prometheus/%s:\n    config:\n      scrape_configs:\n        - job_name: %s\n          scrape_interval: %s\n          scrape_timeout: %s\n          http_sd_configs:\n            - url: %s\n              refresh_interval: %s\n",
			name, name, p.Interval.D(), timeout, quote("http://"+c.producersAddr()+"/targets?"+q), p.Refresh.D())
		names = append(names, "prometheus/"+name)
	}
	return names
}

// writeFilelog writes the filelog receiver: every *.log file of the log
// folder from its beginning, rotated files followed to their end, read
// offsets kept in file_storage; with sequence, each line's pb_seq and
// pb_sent become the int attributes pb.seq and pb.sent.
func (c *Collector) writeFilelog(b *strings.Builder) {
	f := c.cfg.Filelog
	include := f.Include
	if len(include) == 0 {
		include = []string{c.LogDir() + "/*.log"}
	}
	qs := make([]string, len(include))
	for i, p := range include {
		qs[i] = quote(p)
	}
	fmt.Fprintf(b, "  filelog:\n    include: [%s]\n    start_at: beginning\n    poll_interval: %s\n    max_concurrent_files: %d\n    storage: file_storage\n",
		strings.Join(qs, ", "), f.PollInterval.D(), f.MaxConcurrentFiles)
	if !c.cfg.sequence() {
		return
	}
	b.WriteString(`    operators:
      - type: regex_parser
        regex: 'pb_seq\W{1,3}(?P<pb_seq>\d+)\W+pb_sent\W{1,3}(?P<pb_sent>\d+)'
        on_error: send_quiet
      - type: add
        if: 'attributes.pb_seq != nil'
        field: attributes["pb.seq"]
        value: EXPR(int(attributes.pb_seq))
      - type: add
        if: 'attributes.pb_sent != nil'
        field: attributes["pb.sent"]
        value: EXPR(int(attributes.pb_sent))
      - type: remove
        if: 'attributes.pb_seq != nil'
        field: attributes.pb_seq
      - type: remove
        if: 'attributes.pb_sent != nil'
        field: attributes.pb_sent
`)
}

// quote writes s as a YAML double-quoted string.
func quote(s string) string { return strconv.Quote(s) }
