package command

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/scenario"
)

type sinkFlags struct {
	listen   string
	path     string
	faults   pipebench.FaultPolicy // a flag per key: scenario.FaultFlags
	seed     uint64
	every    time.Duration
	otlpGRPC string
	otlpHTTP string
	rw       string
}

func (a *app) sinkCommand() *cobra.Command {
	var f sinkFlags
	cmd := &cobra.Command{
		Use:   "sink",
		Short: "Run the test backend (HTTP or OTLP) on its own, with fault injection, for pipelines that run elsewhere",
		Long: `Run the test backend on its own: an HTTP/CloudEvents sink (--listen), or with
--otlp-grpc and/or --otlp-http an OTLP sink for a collector's otlp or otlphttp
exporter, or with --remote-write a Prometheus remote-write 1.0 receiver (for a
Prometheus agent scraping pipebench producers: it counts series and samples,
apart from the agent's up/scrape_* series and staleness markers). Each matches the sequence numbers pipebench's generators embed,
counts delivered, duplicate, reordered and unmatched items, injects the faults
given by the flags (answered as HTTP statuses, or as gRPC UNAVAILABLE /
RESOURCE_EXHAUSTED), and serves its own counters on /metrics.`,
		Example: `  pipebench sink --listen 127.0.0.1:9000
  pipebench sink --listen 127.0.0.1:9000 --error-ratio 0.7 --error-status 503
  pipebench sink --latency uniform:1ms:20ms --rate-limit 500/s --outage 30s:20s
  pipebench sink --otlp-grpc 127.0.0.1:4317 --rate-limit 3000/s --request-rate-limit 5/s
  pipebench sink --otlp-grpc 127.0.0.1:4317 --otlp-http 127.0.0.1:4318 --error-ratio 0.7
  pipebench sink --remote-write 127.0.0.1:9201   # remote_write url: http://127.0.0.1:9201/api/v1/write
  pipebench sink --listen unix:///run/pipebench/sink.sock
  pipebench sink --otlp-grpc unix:///run/pipebench/otlp.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.sink(f, cmd.Flags().Changed("listen")) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.listen, "listen", "127.0.0.1:9000", "address of the HTTP sink: host:port or unix:///path/to.sock")
	fl.StringVar(&f.otlpGRPC, "otlp-grpc", "", "run the OTLP sink instead, with OTLP/gRPC on this address")
	fl.StringVar(&f.otlpHTTP, "otlp-http", "", "run the OTLP sink instead, with OTLP/HTTP (and /metrics) on this address")
	fl.StringVar(&f.rw, "remote-write", "", "run the Prometheus remote-write sink instead, on this address (path /api/v1/write, metrics at /metrics)")
	fl.StringVar(&f.path, "path", "/", "path to accept events on (/ accepts any path)")
	// The fault flags are the fault policy's keys, as a scenario's faults
	// has them (their windows measured from start-up).
	for _, pf := range scenario.FaultFlags(&f.faults) {
		fl.Var(pf.Value, pf.Name, pf.Usage)
	}
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the fault decisions")
	fl.DurationVar(&f.every, "every", 5*time.Second, "print counts this often")
	return cmd
}

func (a *app) sink(f sinkFlags, listenSet bool) error {
	pol, err := f.policy()
	if err != nil {
		return err
	}
	sk, err := builtins.ServeSink(a.ctx, a.reg, builtins.SinkServe{Listen: f.listen, ListenSet: listenSet, Path: f.path,
		OTLPGRPC: f.otlpGRPC, OTLPHTTP: f.otlpHTTP, RemoteWrite: f.rw, Faults: pol, Seed: f.seed})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "sink listening on %s; Ctrl-C to stop\n", sk.Where)
	t := time.NewTicker(f.every)
	defer t.Stop()
	var last uint64
	lastAt := time.Now()
	print := func() {
		var line string
		line, last = sk.Counts(last, time.Since(lastAt))
		lastAt = time.Now()
		fmt.Fprintln(a.stdout, line)
	}
	for {
		select {
		case <-a.ctx.Done():
			print()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return sk.Shutdown(ctx)
		case <-t.C:
			print()
		}
	}
}

// policy is the fault policy the flags gave, checked by its own rules,
// each problem named by its flag.
func (f sinkFlags) policy() (pipebench.FaultPolicy, error) {
	p := f.faults.Defaulted()
	if err := p.Validate(0); err != nil {
		return p, pipebench.UsageError(scenario.FlagProblems(err, scenario.FaultFlags(&pipebench.FaultPolicy{})), "`pipebench sink --help` lists the fault flags; they take what a scenario's faults take", nil)
	}
	return p, nil
}
