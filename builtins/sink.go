package builtins

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/unixsock"
	"github.com/pipebench/pipebench/kpi"
	httpsink "github.com/pipebench/pipebench/sink/http"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// SinkServe says which sink `pipebench sink` runs on its own, for a
// pipeline that runs elsewhere, and with which faults: the remote-write
// sink when RemoteWrite is set, the OTLP sink when OTLPGRPC or OTLPHTTP
// is, else the HTTP sink on Listen. Each field is named in errors by its
// flag.
type SinkServe struct {
	Listen      string // --listen: the HTTP sink's host:port or unix:///path
	ListenSet   bool   // --listen was given (it belongs to the HTTP sink only)
	Path        string // --path: the HTTP sink's path ("/" any)
	OTLPGRPC    string // --otlp-grpc
	OTLPHTTP    string // --otlp-http
	RemoteWrite string // --remote-write
	Faults      pipebench.FaultPolicy
	Seed        uint64
}

// ServedSink is a stand-alone sink that runs (see ServeSink).
type ServedSink struct {
	// Arrivals counts what it received.
	Arrivals *kpi.Arrivals
	// Where says for a person what it listens on.
	Where string
	// Shutdown stops it.
	Shutdown func(context.Context) error
	// Extra, if set, adds the sink's own counts to a progress line.
	Extra func() string
}

// ServeSink starts the sink s names, injecting its faults from now on.
func ServeSink(ctx context.Context, s SinkServe) (*ServedSink, error) {
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 0)
	out := &ServedSink{Arrivals: arr}
	otlp := s.OTLPGRPC != "" || s.OTLPHTTP != ""
	if s.RemoteWrite != "" && otlp {
		return nil, pipebench.UsageError("--remote-write and --otlp-grpc/--otlp-http are different sinks", "give one of them", nil)
	}
	if (s.RemoteWrite != "" || otlp) && (s.ListenSet || s.Path != "/") {
		other := "--otlp-grpc/--otlp-http (OTLP sink)"
		if s.RemoteWrite != "" {
			other = "--remote-write (remote-write sink)"
		}
		return nil, pipebench.UsageError("--listen and --path are for the HTTP sink", "give either --listen (HTTP sink) or "+other, nil)
	}
	switch {
	case s.RemoteWrite != "":
		cfg := promrwsink.DefaultConfig()
		cfg.Listen = s.RemoteWrite
		if err := cfg.Validate(); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("--remote-write %q is not an address", s.RemoteWrite), "write host:port, like --remote-write 127.0.0.1:9201", nil)
		}
		sk := promrwsink.New(*cfg)
		sk.SetFaults(s.Faults, time.Now())
		if err := sk.Start(ctx, arr); err != nil {
			return nil, pipebench.UsageError("cannot start the remote-write sink", "choose a free address with --remote-write", err)
		}
		out.Where = fmt.Sprintf("%s for remote write (metrics at %s)", sk.Endpoint(), sk.MetricsURL())
		out.Shutdown = sk.Shutdown
		out.Extra = func() string {
			st := sk.Stats()
			return fmt.Sprintf("  series %d  samples %d (served %d, scrape report %d, stale %d)", st.Series, st.Samples, st.Other, st.Report, st.Stale)
		}
	case otlp:
		for _, fl := range []struct{ name, addr, port string }{{"--otlp-grpc", s.OTLPGRPC, "4317"}, {"--otlp-http", s.OTLPHTTP, "4318"}} {
			if err := unixsock.Check(fl.addr); fl.addr != "" && err != nil {
				return nil, pipebench.UsageError(fmt.Sprintf("%s %q is not an address", fl.name, fl.addr), fmt.Sprintf("write host:port, like %s 127.0.0.1:%s, or a Unix socket, unix:///path/to.sock", fl.name, fl.port), nil)
			}
		}
		cfg := otlpsink.Config{GRPCListen: s.OTLPGRPC, HTTPListen: s.OTLPHTTP}
		if err := cfg.Validate(); err != nil {
			return nil, pipebench.UsageError("the OTLP sink's addresses are not valid", "write host:port, like --otlp-grpc 127.0.0.1:4317", err)
		}
		sk := otlpsink.New(cfg, s.Seed)
		sk.SetFaults(s.Faults, time.Now())
		if err := sk.Start(ctx, arr); err != nil {
			return nil, pipebench.UsageError("cannot start the OTLP sink", "choose free addresses with --otlp-grpc and --otlp-http", err)
		}
		var where []string
		if g := sk.GRPCEndpoint(); g != "" {
			where = append(where, g+" for OTLP/gRPC")
		}
		if h := sk.HTTPEndpoint(); h != "" {
			if _, ok := unixsock.Path(h); ok {
				where = append(where, "the socket "+h+" for OTLP/HTTP: POST /v1/{traces,metrics,logs} (GET /metrics)")
			} else {
				where = append(where, h+"/v1/{traces,metrics,logs} for OTLP/HTTP (metrics at "+h+"/metrics)")
			}
		}
		out.Where, out.Shutdown = strings.Join(where, ", "), sk.Shutdown
	default:
		sk, err := httpsink.New(httpsink.Params{Listen: s.Listen, Path: s.Path, Faults: s.Faults, Seed: s.Seed, Arrivals: arr})
		if err != nil {
			return nil, pipebench.UsageError("cannot start the sink", "check --listen", err)
		}
		if err := unixsock.Check(s.Listen); err != nil {
			return nil, pipebench.UsageError("--listen "+err.Error(), "write host:port, like --listen 127.0.0.1:9000, or a Unix socket, --listen unix:///path/to.sock", nil)
		}
		if err := sk.Start(ctx, arr); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("cannot listen on %s", s.Listen), "choose a free address with --listen", err)
		}
		if _, ok := unixsock.Path(sk.Endpoint()); ok {
			out.Where = fmt.Sprintf("the socket %s: POST %s (GET /metrics)", sk.Endpoint(), s.Path)
		} else {
			out.Where = fmt.Sprintf("%s (metrics at %s/metrics)", sk.Endpoint(), strings.TrimSuffix(strings.TrimSuffix(sk.Endpoint(), strings.TrimPrefix(s.Path, "/")), "/"))
		}
		out.Shutdown = sk.Shutdown
	}
	return out, nil
}

// Counts is a progress line of what the sink received: delivered (and its
// rate since the line before, last items over elapsed), faulted,
// unmatched, duplicates, reordered, and the sink's own counts.
func (s *ServedSink) Counts(last uint64, elapsed time.Duration) (line string, delivered uint64) {
	d := s.Arrivals.Delivered()
	faulted, unmatched := s.Arrivals.Totals()
	st := s.Arrivals.Stats(0, ^uint64(0))
	more := ""
	if s.Extra != nil {
		more = s.Extra()
	}
	return fmt.Sprintf("delivered %d (%.0f/s)  faulted %d  unmatched %d  duplicates %d  reordered %d%s",
		d, float64(d-last)/elapsed.Seconds(), faulted, unmatched, st.Duplicates, st.Reordered, more), d
}
