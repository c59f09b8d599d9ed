package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/unixsock"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/scenario"
	httpsink "github.com/pipebench/pipebench/sink/http"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
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
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 0)
	var shutdown func(context.Context) error
	var extra func() string
	if f.rw != "" && (f.otlpGRPC != "" || f.otlpHTTP != "") {
		return pipebench.UsageError("--remote-write and --otlp-grpc/--otlp-http are different sinks", "give one of them", nil)
	}
	if f.rw != "" {
		if listenSet || f.path != "/" {
			return pipebench.UsageError("--listen and --path are for the HTTP sink", "give either --listen (HTTP sink) or --remote-write (remote-write sink)", nil)
		}
		cfg := promrwsink.DefaultConfig()
		cfg.Listen = f.rw
		if err := cfg.Validate(); err != nil {
			return pipebench.UsageError(fmt.Sprintf("--remote-write %q is not an address", f.rw), "write host:port, like --remote-write 127.0.0.1:9201", nil)
		}
		s := promrwsink.New(*cfg)
		s.SetFaults(pol, time.Now())
		if err := s.Start(a.ctx, arr); err != nil {
			return pipebench.UsageError("cannot start the remote-write sink", "choose a free address with --remote-write", err)
		}
		fmt.Fprintf(a.stdout, "sink listening: remote write on %s (metrics at %s); Ctrl-C to stop\n", s.Endpoint(), s.MetricsURL())
		shutdown = s.Shutdown
		extra = func() string {
			st := s.Stats()
			return fmt.Sprintf("  series %d  samples %d (served %d, scrape report %d, stale %d)", st.Series, st.Samples, st.Other, st.Report, st.Stale)
		}
	} else if f.otlpGRPC != "" || f.otlpHTTP != "" {
		if listenSet || f.path != "/" {
			return pipebench.UsageError("--listen and --path are for the HTTP sink", "give either --listen (HTTP sink) or --otlp-grpc/--otlp-http (OTLP sink)", nil)
		}
		for _, fl := range []struct{ name, addr, port string }{{"--otlp-grpc", f.otlpGRPC, "4317"}, {"--otlp-http", f.otlpHTTP, "4318"}} {
			if err := unixsock.Check(fl.addr); fl.addr != "" && err != nil {
				return pipebench.UsageError(fmt.Sprintf("%s %q is not an address", fl.name, fl.addr), fmt.Sprintf("write host:port, like %s 127.0.0.1:%s, or a Unix socket, unix:///path/to.sock", fl.name, fl.port), nil)
			}
		}
		cfg := otlpsink.Config{GRPCListen: f.otlpGRPC, HTTPListen: f.otlpHTTP}
		if err := cfg.Validate(); err != nil {
			return pipebench.UsageError("the OTLP sink's addresses are not valid", "write host:port, like --otlp-grpc 127.0.0.1:4317", err)
		}
		s := otlpsink.New(cfg, f.seed)
		s.SetFaults(pol, time.Now())
		if err := s.Start(a.ctx, arr); err != nil {
			return pipebench.UsageError("cannot start the OTLP sink", "choose free addresses with --otlp-grpc and --otlp-http", err)
		}
		var where []string
		if g := s.GRPCEndpoint(); g != "" {
			where = append(where, "OTLP/gRPC on "+g)
		}
		if h := s.HTTPEndpoint(); h != "" {
			if _, ok := unixsock.Path(h); ok {
				where = append(where, "OTLP/HTTP on the socket "+h+": POST /v1/{traces,metrics,logs} (GET /metrics)")
			} else {
				where = append(where, "OTLP/HTTP on "+h+"/v1/{traces,metrics,logs} (metrics at "+h+"/metrics)")
			}
		}
		fmt.Fprintf(a.stdout, "sink listening: %s; Ctrl-C to stop\n", strings.Join(where, ", "))
		shutdown = s.Shutdown
	} else {
		s, err := httpsink.New(httpsink.Params{Listen: f.listen, Path: f.path, Faults: pol, Seed: f.seed, Arrivals: arr})
		if err != nil {
			return pipebench.UsageError("cannot start the sink", "check --listen", err)
		}
		if err := unixsock.Check(f.listen); err != nil {
			return pipebench.UsageError("--listen "+err.Error(), "write host:port, like --listen 127.0.0.1:9000, or a Unix socket, --listen unix:///path/to.sock", nil)
		}
		if err := s.Start(a.ctx, arr); err != nil {
			return pipebench.UsageError(fmt.Sprintf("cannot listen on %s", f.listen), "choose a free address with --listen", err)
		}
		if _, ok := unixsock.Path(s.Endpoint()); ok {
			fmt.Fprintf(a.stdout, "sink listening on the socket %s: POST %s (GET /metrics); Ctrl-C to stop\n", s.Endpoint(), f.path)
		} else {
			fmt.Fprintf(a.stdout, "sink listening on %s (metrics at %s/metrics); Ctrl-C to stop\n", s.Endpoint(), strings.TrimSuffix(s.Endpoint(), strings.TrimPrefix(f.path, "/")))
		}
		shutdown = s.Shutdown
	}
	t := time.NewTicker(f.every)
	defer t.Stop()
	var last uint64
	lastAt := time.Now()
	print := func() {
		d := arr.Delivered()
		faulted, unmatched := arr.Totals()
		st := arr.Stats(0, ^uint64(0))
		rate := float64(d-last) / time.Since(lastAt).Seconds()
		last, lastAt = d, time.Now()
		more := ""
		if extra != nil {
			more = extra()
		}
		fmt.Fprintf(a.stdout, "delivered %d (%.0f/s)  faulted %d  unmatched %d  duplicates %d  reordered %d%s\n",
			d, rate, faulted, unmatched, st.Duplicates, st.Reordered, more)
	}
	for {
		select {
		case <-a.ctx.Done():
			print()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return shutdown(ctx)
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
