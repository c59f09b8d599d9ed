package builtins

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/conn/unixsock"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/scenario"
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

// servedKey is a key of a sink's configuration that a flag of `pipebench
// sink` sets.
type servedKey struct {
	flag, key, value string
}

// ServeSink starts the sink s names, built through reg as every command
// builds its plug-ins (the factory's configuration, its keys set from the
// flags, its Validate), injecting its faults from now on.
func ServeSink(ctx context.Context, reg *pipebench.Registry, s SinkServe) (*ServedSink, error) {
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
	// Which sink, the keys its flags set, and what to say when it cannot
	// be built or started.
	var (
		typ, startMsg, startHint string
		keys                     []servedKey
		invalid                  func(err error) error
	)
	switch {
	case s.RemoteWrite != "":
		typ, startMsg, startHint = promrwsink.Factory().Name, "cannot start the remote-write sink", "choose a free address with --remote-write"
		keys = []servedKey{{"--remote-write", "listen", s.RemoteWrite}}
		invalid = func(error) error {
			return pipebench.UsageError(fmt.Sprintf("--remote-write %q is not an address", s.RemoteWrite), "write host:port, like --remote-write 127.0.0.1:9201", nil)
		}
	case otlp:
		for _, fl := range []struct{ name, addr, port string }{{"--otlp-grpc", s.OTLPGRPC, "4317"}, {"--otlp-http", s.OTLPHTTP, "4318"}} {
			if err := unixsock.Check(fl.addr); fl.addr != "" && err != nil {
				return nil, pipebench.UsageError(fmt.Sprintf("%s %q is not an address", fl.name, fl.addr), fmt.Sprintf("write host:port, like %s 127.0.0.1:%s, or a Unix socket, unix:///path/to.sock", fl.name, fl.port), nil)
			}
		}
		typ, startMsg, startHint = otlpsink.Factory().Name, "cannot start the OTLP sink", "choose free addresses with --otlp-grpc and --otlp-http"
		keys = []servedKey{{"--otlp-grpc", "grpc_listen", s.OTLPGRPC}, {"--otlp-http", "http_listen", s.OTLPHTTP}}
		invalid = func(err error) error {
			return pipebench.UsageError("the OTLP sink's addresses are not valid", "write host:port, like --otlp-grpc 127.0.0.1:4317", err)
		}
	default:
		if err := unixsock.Check(s.Listen); err != nil {
			return nil, pipebench.UsageError("--listen "+err.Error(), "write host:port, like --listen 127.0.0.1:9000, or a Unix socket, --listen unix:///path/to.sock", nil)
		}
		typ, startMsg, startHint = httpsink.Factory().Name, "cannot listen on "+s.Listen, "choose a free address with --listen"
		keys = []servedKey{{"--listen", "listen", s.Listen}, {"--path", "path", s.Path}}
		invalid = func(err error) error {
			return pipebench.UsageError("cannot start the sink", "check --listen and --path", err)
		}
	}
	f, ok := reg.Sinks.Lookup(typ)
	if !ok || f.NewConfig == nil {
		return nil, pipebench.UsageError(fmt.Sprintf("this pipebench has no %s sink", typ), "sinks: "+strings.Join(reg.Sinks.Names(), ", "), nil)
	}
	cfg := f.NewConfig()
	for _, k := range keys {
		if err := scenario.SetKey(cfg, k.key, k.value); err != nil {
			return nil, pipebench.UsageError(fmt.Sprintf("%s %q: %v", k.flag, k.value, err), "", nil)
		}
	}
	built, err := f.New(cfg, pipebench.Env{})
	if err != nil {
		return nil, invalid(flagProblems(err, keys))
	}
	if fs, ok := built.(pipebench.FaultSetter); ok {
		if sd, ok := built.(pipebench.FaultSeeder); ok {
			sd.SeedFaults(s.Seed)
		}
		fs.SetFaults(s.Faults, time.Now())
	} else if !s.Faults.IsZero() {
		return nil, pipebench.UsageError(fmt.Sprintf("the %s sink injects no faults", typ), "run it without the fault flags", nil)
	}
	arr := kpi.NewArrivals(1, nil)
	arr.StartPhase(0, 0)
	if err := built.Start(ctx, arr); err != nil {
		return nil, pipebench.UsageError(startMsg, startHint, err)
	}
	out := &ServedSink{Arrivals: arr, Shutdown: built.Shutdown, Where: where(built, s)}
	if rw, ok := built.(*promrwsink.Sink); ok {
		out.Extra = func() string {
			st := rw.Stats()
			return fmt.Sprintf("  series %d  samples %d (served %d, scrape report %d, stale %d)", st.Series, st.Samples, st.Other, st.Report, st.Stale)
		}
	}
	return out, nil
}

// flagProblems names, in a configuration's problems ("listen: ..."), the
// flags that set the keys.
func flagProblems(err error, keys []servedKey) error {
	var pe *pipebench.Error
	if errors.As(err, &pe) && pe.Err != nil {
		err = pe.Err
	}
	var lines []string
	for _, line := range strings.Split(err.Error(), "\n") {
		key, msg := pipebench.SplitKey(line)
		for _, k := range keys {
			if k.key == key {
				line = k.flag + ": " + msg
			}
		}
		lines = append(lines, line)
	}
	return errors.New(strings.Join(lines, "; "))
}

// where says for a person what the sink listens on: each endpoint of a
// sink that receives on several (OTLP), the remote-write URL and the
// metrics', or the address or socket events are posted to.
func where(sk pipebench.Sink, s SinkServe) string {
	if m, ok := sk.(pipebench.MultiEndpoint); ok {
		eps := m.Endpoints()
		var parts []string
		if g := eps["grpc"]; g != "" {
			parts = append(parts, g+" for OTLP/gRPC")
		}
		if h := eps["http"]; h != "" {
			if _, ok := unixsock.Path(h); ok {
				parts = append(parts, "the socket "+h+" for OTLP/HTTP: POST /v1/{traces,metrics,logs} (GET /metrics)")
			} else {
				parts = append(parts, h+"/v1/{traces,metrics,logs} for OTLP/HTTP (metrics at "+h+"/metrics)")
			}
		}
		return strings.Join(parts, ", ")
	}
	if s.RemoteWrite != "" {
		if mu, ok := sk.(interface{ MetricsURL() string }); ok {
			return fmt.Sprintf("%s for remote write (metrics at %s)", sk.Endpoint(), mu.MetricsURL())
		}
	}
	if _, ok := unixsock.Path(sk.Endpoint()); ok {
		return fmt.Sprintf("the socket %s: POST %s (GET /metrics)", sk.Endpoint(), s.Path)
	}
	return fmt.Sprintf("%s (metrics at %s/metrics)", sk.Endpoint(), strings.TrimSuffix(strings.TrimSuffix(sk.Endpoint(), strings.TrimPrefix(s.Path, "/")), "/"))
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
