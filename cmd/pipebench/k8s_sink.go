package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/k8s"
	"github.com/pipebench/pipebench/kpi"
	httpsink "github.com/pipebench/pipebench/sink/http"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// The ports of the in-cluster sinks.
const (
	sinkPortHTTP        = 8080
	sinkPortOTLPGRPC    = 4317
	sinkPortOTLPHTTP    = 4318
	sinkPortRemoteWrite = 9201
)

// inClusterSink returns how the scenario's sink runs in the cluster, and
// its configuration listening on ip; nil for a sink that cannot run there
// (the nats sink consumes from a server: it runs in each shard).
func (a *app) inClusterSink(c *pipebench.Component, ip string) (*k8s.SinkSpec, any) {
	if c == nil {
		return nil, nil
	}
	cfg := c.Config
	if cfg == nil {
		if f, ok := a.reg.Sinks.Lookup(c.Type); ok && f.NewConfig != nil {
			cfg = f.NewConfig()
		}
	}
	at := func(port int32) string { return net.JoinHostPort(ip, strconv.Itoa(int(port))) }
	spec := &k8s.SinkSpec{Type: c.Type}
	switch x := cfg.(type) {
	case *httpsink.Config:
		n := *x
		n.Listen = at(sinkPortHTTP)
		spec.Ports = []k8s.SinkPort{{Name: "http", Port: sinkPortHTTP}}
		return spec, &n
	case *otlpsink.Config:
		n := *x
		if x.GRPCListen != "" {
			n.GRPCListen = at(sinkPortOTLPGRPC)
			spec.Ports = append(spec.Ports, k8s.SinkPort{Name: "otlp-grpc", Port: sinkPortOTLPGRPC})
		}
		if x.HTTPListen != "" {
			n.HTTPListen = at(sinkPortOTLPHTTP)
			spec.Ports = append(spec.Ports, k8s.SinkPort{Name: "otlp-http", Port: sinkPortOTLPHTTP})
		}
		return spec, &n
	case *promrwsink.Config:
		n := *x
		n.Listen = at(sinkPortRemoteWrite)
		spec.Ports = []k8s.SinkPort{{Name: "remote-write", Port: sinkPortRemoteWrite}}
		return spec, &n
	}
	return nil, nil
}

// rewired returns a copy of reg whose sink factories make what sink
// returns, and whose system under test factories what sut returns, where
// given: a shard's runner then sends to the in-cluster sink and matches
// what it received (a FeedSink), or to the in-cluster system under test.
// The scenario still decodes and validates as written (each factory keeps
// its name and configuration), so every shard's plan, and the merged
// Result's, name the scenario's own components.
func rewired(reg *pipebench.Registry, sink func() pipebench.Sink, sut func() pipebench.SUT) (*pipebench.Registry, error) {
	out := pipebench.NewRegistry()
	if err := copyCatalog(out.Generators, reg.Generators, nil); err != nil {
		return nil, err
	}
	if err := copyCatalog(out.Drivers, reg.Drivers, nil); err != nil {
		return nil, err
	}
	if err := copyCatalog(out.Observers, reg.Observers, nil); err != nil {
		return nil, err
	}
	var wrapSUT func(pipebench.Factory[pipebench.SUT]) pipebench.Factory[pipebench.SUT]
	if sut != nil {
		wrapSUT = func(f pipebench.Factory[pipebench.SUT]) pipebench.Factory[pipebench.SUT] {
			f.New = func(any, pipebench.Env) (pipebench.SUT, error) { return sut(), nil }
			return f
		}
	}
	if err := copyCatalog(out.SUTs, reg.SUTs, wrapSUT); err != nil {
		return nil, err
	}
	if err := copyCatalog(out.Reporters, reg.Reporters, nil); err != nil {
		return nil, err
	}
	var wrapSink func(pipebench.Factory[pipebench.Sink]) pipebench.Factory[pipebench.Sink]
	if sink != nil {
		wrapSink = func(f pipebench.Factory[pipebench.Sink]) pipebench.Factory[pipebench.Sink] {
			f.New = func(any, pipebench.Env) (pipebench.Sink, error) { return sink(), nil }
			return f
		}
	}
	return out, copyCatalog(out.Sinks, reg.Sinks, wrapSink)
}

func copyCatalog[T any](dst, src *pipebench.Catalog[T], wrap func(pipebench.Factory[T]) pipebench.Factory[T]) error {
	for _, name := range src.Names() {
		f, _ := src.Lookup(name)
		if wrap != nil {
			f = wrap(f)
		}
		if err := dst.Register(f); err != nil {
			return err
		}
	}
	return nil
}

// useInClusterSink makes this worker's runs send to the in-cluster sink
// at host and take their arrivals from its feed, for the shard whose
// sequence numbers are [lo, hi) (hi 0: the last shard).
func (a *app) useInClusterSink(client kubernetes.Interface, ns, run, host string, lo, hi uint64) error {
	target, targets, feed, err := k8s.SinkEndpoints(a.ctx, client, ns, run, host, 5*time.Minute)
	if err != nil {
		return err
	}
	return a.rewire(func() pipebench.Sink {
		return &k8s.FeedSink{Target: target, Targets: targets, FeedURL: feed, Lo: lo, Hi: hi, Log: a.stderr}
	}, nil, "sink", target)
}

// rewire makes this worker's runs use the in-cluster component (what)
// receiving at target: a sink, a system under test (see rewired).
func (a *app) rewire(sink func() pipebench.Sink, sut func() pipebench.SUT, what, target string) error {
	reg, err := rewired(a.reg, sink, sut)
	if err != nil {
		return err
	}
	a.reg = reg
	fmt.Fprintf(a.stderr, "sending to the in-cluster %s at %s\n", what, target)
	return nil
}

func (a *app) k8sSinkCommand() *cobra.Command {
	return a.podCommand("sink", "Run the scenario's sink inside the cluster for k8s run (reads its run from the environment)", func(ip inPod) error {
		dir := ip.dir
		p := k8s.SinkPod{InPod: k8s.InPod{Client: ip.client, Namespace: ip.ns, Run: ip.run, Pod: ip.pod, IP: ip.ip, Log: a.stderr}}
		var sink pipebench.Sink
		p.Start = func(ctx context.Context, run *corev1.ConfigMap) (*k8s.SinkStarted, error) {
			plan, err := a.runPlan(dir, run)
			if err != nil {
				return nil, err
			}
			spec, cfg := a.inClusterSink(plan.Sink, p.IP)
			if spec == nil {
				return nil, fmt.Errorf("the scenario's sink cannot run in the cluster (sink %v)", plan.Sink)
			}
			f, _ := a.reg.Sinks.Lookup(plan.Sink.Type)
			s, err := f.New(cfg, pipebench.Env{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				return nil, err
			}
			arr := kpi.NewArrivals(1, nil)
			arr.StartPhase(0, 0)
			arr.SetRunning(0)
			feed := &k8s.Feed{Also: arr}
			if err := s.Start(ctx, feed); err != nil {
				return nil, fmt.Errorf("start the %s sink: %w", plan.Sink.Type, err)
			}
			sink = s
			st := &k8s.SinkStarted{Endpoint: s.Endpoint(), Feed: feed}
			if m, ok := s.(pipebench.MultiEndpoint); ok {
				st.Endpoints = m.Endpoints()
			}
			if fs, ok := s.(pipebench.FaultSetter); ok {
				// The shards' phases, on the shared clock: each phase's
				// fault policy from its start (a blast phase has no
				// planned end: the next policy follows at once).
				st.Faults = func(ctx context.Context, start time.Time) {
					at := start
					for _, ph := range plan.Phases {
						if wait := time.Until(at); wait > 0 {
							select {
							case <-ctx.Done():
								return
							case <-time.After(wait):
							}
						}
						fs.SetFaults(ph.Faults, at)
						at = at.Add(ph.Duration.D())
					}
				}
			}
			st.Counts = func() k8s.SinkCounts {
				faulted, unmatched := arr.Totals()
				s := arr.Stats(0, 0)
				return k8s.SinkCounts{Received: arr.Delivered(), Duplicates: s.Duplicates, Faulted: faulted, Unmatched: unmatched}
			}
			return st, nil
		}
		err := p.Main(a.ctx)
		if sink != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			sink.Shutdown(ctx)
		}
		return err
	})
}
