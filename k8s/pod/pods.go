package pod

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/runner"
	"github.com/pipebench/pipebench/scenario"
)

// The environment of the pods a launch creates: what `PROGRAM k8s
// worker|sink|sut` read to find their run (see FromEnv).
const (
	EnvRun       = "PIPEBENCH_K8S_RUN"
	EnvNamespace = "POD_NAMESPACE"
	EnvPod       = "POD_NAME"
	EnvNode      = "NODE_NAME"
	EnvIP        = "POD_IP"
	// EnvJobIndex is set by the Job controller in an Indexed Job's pods.
	EnvJobIndex = "JOB_COMPLETION_INDEX"
)

// Pod is what a command running in one of a run's pods knows of its pod
// and its run.
type Pod struct {
	InPod
	// Node is the pod's node (a DaemonSet's worker finds its shard by it).
	Node string
	// Index is the shard (1-based) of an Indexed Job's pod; 0 otherwise.
	Index int
	// Sink and SUT are the hosts (Service names) of the in-cluster sink
	// and system under test, "" when the run has none.
	Sink, SUT string
}

// FromEnv reads the pod's side of a run from its environment (getenv:
// os.Getenv) and connects to the API server with the pod's service
// account (or $KUBECONFIG).
func FromEnv(getenv func(string) string) (Pod, error) {
	p := Pod{InPod: InPod{Namespace: getenv(EnvNamespace), Run: getenv(EnvRun), Pod: getenv(EnvPod), IP: getenv(EnvIP)},
		Node: getenv(EnvNode), Sink: getenv(EnvSink), SUT: getenv(EnvSUT)}
	if p.Run == "" {
		return p, pipebench.UsageError(EnvRun+" is not set", "k8s worker, sink and sut run in the pods pipebench k8s run creates", nil)
	}
	if s := getenv(EnvJobIndex); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil {
			return p, fmt.Errorf("%s %q: %w", EnvJobIndex, s, err)
		}
		p.Index = i + 1
	}
	c, ns, err := Connect(p.Namespace)
	if err != nil {
		return p, err
	}
	p.Client, p.Namespace = c, ns
	return p, nil
}

// Runtime is how the pods run the scenario's components: the registry and
// the parameters of every run (a shard's), as the command line sets them.
type Runtime struct {
	// Exec is the base of a shard's run (registry, tool version, logger);
	// its Keep, Progress and Registry are set per shard.
	Exec execute.Params
	// Log receives what a person reading the pod's log should see.
	Log io.Writer
	// Dir is a scratch folder of the pod's own.
	Dir string
}

func (rt Runtime) log() io.Writer {
	if rt.Log == nil {
		return io.Discard
	}
	return rt.Log
}

// CompilePlan compiles the whole plan of a run from its scenario text,
// under its own file name (every pod's plan names the same file, so the
// shards' plans are one), scaled to duration if set.
func CompilePlan(reg *pipebench.Registry, file string, data []byte, duration string) (pipebench.Plan, error) {
	sc, err := scenario.Parse(file, data, scenario.Params{Registry: reg})
	if err != nil {
		return pipebench.Plan{}, err
	}
	plan, err := scenario.Compile(sc)
	if err != nil {
		return plan, err
	}
	d, err := parseDuration(duration)
	if err != nil || d <= 0 {
		return plan, err
	}
	scaled, err := plan.Scale(d)
	if err != nil {
		return plan, pipebench.UsageError(fmt.Sprintf("--duration %s cannot be used", d), "give a positive duration long enough for every phase to send", err)
	}
	return scaled, nil
}

func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", s, err)
	}
	return d, nil
}

// RunPlan compiles the whole plan of the run whose ConfigMap is run.
func RunPlan(reg *pipebench.Registry, run *corev1.ConfigMap) (pipebench.Plan, error) {
	return CompilePlan(reg, scenarioFile(run.Data[KeyFile]), []byte(run.Data[KeyScenario]), run.Data[KeyDuration])
}

// Worker runs one shard in its pod (pipebench-load k8s worker): it sends to the
// in-cluster sink and system under test when the run has them, serves the
// shard's metrics when the run asks, and reports its progress and Result
// through its ConfigMap.
func (rt Runtime) Worker(ctx context.Context, p Pod) error {
	reg := rt.Exec.Registry
	w := Worker{Client: p.Client, Namespace: p.Namespace, Run: p.Run, Pod: p.Pod, Node: p.Node, Index: p.Index, Log: rt.log()}
	var live *execute.Live
	defer func() { live.Stop() }()
	w.Check = func(s Shard) error {
		whole, err := CompilePlan(reg, s.File, s.Scenario, s.Duration)
		if err != nil {
			return err
		}
		sp, err := s.slice(whole)
		if err != nil {
			return err
		}
		if p.SUT != "" && sp.SUT != nil {
			target, targets, instances, err := SUTEndpoints(ctx, p.Client, p.Namespace, p.Run, p.SUT, 5*time.Minute)
			if err != nil {
				return err
			}
			sut := &remoteSUT{target: target, targets: targets, instances: instances}
			if reg, err = rewired(reg, nil, func() pipebench.SUT { return sut }); err != nil {
				return err
			}
			fmt.Fprintf(rt.log(), "sending to the in-cluster system under test at %s\n", target)
		}
		if p.Sink != "" && sp.Sink != nil {
			// The shard's sequence numbers run up to the next shard's
			// first.
			var hi uint64
			if i, n := sp.Shard.Index+1, sp.Shard.Count; i < n {
				next, err := whole.Slice(i, n)
				if err != nil {
					return err
				}
				hi = next.FirstSeq()
			}
			target, targets, feed, err := SinkEndpoints(ctx, p.Client, p.Namespace, p.Run, p.Sink, 5*time.Minute)
			if err != nil {
				return err
			}
			lo, log := sp.FirstSeq(), rt.log()
			sink := func() pipebench.Sink {
				return &FeedSink{Target: target, Targets: targets, FeedURL: feed, Lo: lo, Hi: hi, Log: log}
			}
			if reg, err = rewired(reg, sink, nil); err != nil {
				return err
			}
			fmt.Fprintf(rt.log(), "sending to the in-cluster sink at %s\n", target)
		}
		if s.MetricsPort > 0 {
			addr := net.JoinHostPort(p.IP, strconv.Itoa(s.MetricsPort))
			if live, err = execute.StartLive(ctx, execute.LiveOptions{MetricsAddr: addr, Linger: s.MetricsLinger, Log: rt.log()}, sp); err != nil {
				return fmt.Errorf("serve the shard's metrics: %w", err)
			}
		}
		return nil
	}
	w.Exec = func(ctx context.Context, s Shard, start time.Time, progress func(Progress)) ([]byte, error) {
		plan, err := s.Plan(reg, start)
		if err != nil {
			return nil, err
		}
		ep := rt.Exec
		ep.Registry = reg
		ep.Keep = execute.Keep{NoStore: true, Quiet: true}
		var last Progress
		ep.Progress = func(pr runner.Progress) {
			live.Update(pr)
			last = ProgressOf(pr)
			progress(last)
		}
		out := execute.Run(ctx, plan, ep)
		live.Finish(out.Result)
		// The final values, until scraped once more (at most the run's
		// metrics linger, and not past the pod's end).
		live.Close(ctx, rt.log())
		live = nil
		if out.Result == nil {
			return nil, out.Err
		}
		if out.Result.Total != nil {
			sent, _ := out.Result.Total.Get("sent")
			last.Sent, last.Rate, last.Final = uint64(sent), 0, true
			progress(last)
		}
		data, err := json.Marshal(out.Result)
		if err != nil {
			return nil, err
		}
		return data, out.Err
	}
	return w.Main(ctx)
}

// ProgressOf is what a shard reports of the runner's progress.
func ProgressOf(pr runner.Progress) Progress {
	return Progress{Sent: pr.TotalSent, Failed: pr.Failed, Phase: pr.Phase, Rate: pr.SentRate}
}

// Plan compiles the shard's slice of the run's plan with the plug-ins of
// reg, starting at start.
func (s Shard) Plan(reg *pipebench.Registry, start time.Time) (pipebench.Plan, error) {
	whole, err := CompilePlan(reg, s.File, s.Scenario, s.Duration)
	if err != nil {
		return whole, err
	}
	plan, err := s.slice(whole)
	plan.StartAt = start.UTC()
	return plan, err
}

// slice is the shard's slice of the whole plan.
func (s Shard) slice(whole pipebench.Plan) (pipebench.Plan, error) {
	return whole.Slice(s.Index-1, s.Count)
}

// SharedSink returns how the scenario's sink runs in the cluster, and its
// configuration listening on host; nil for a sink that cannot run there
// (one whose configuration is no pipebench.SharedSink, like nats, which
// consumes from a server: it runs in each shard).
func SharedSink(reg *pipebench.Registry, c *pipebench.Component, host string) (*SinkSpec, any) {
	if c == nil {
		return nil, nil
	}
	cfg := c.Config
	if cfg == nil {
		if f, ok := reg.Sinks.Lookup(c.Type); ok && f.NewConfig != nil {
			cfg = f.NewConfig()
		}
	}
	s, ok := cfg.(pipebench.SharedSink)
	if !ok {
		return nil, nil
	}
	n, ports := s.Shared(host)
	spec := &SinkSpec{Type: c.Type}
	for _, p := range ports {
		spec.Ports = append(spec.Ports, SinkPort{Name: p.Name, Port: int32(p.Port)})
	}
	return spec, n
}

// quietEnv is the Env of a component started in a pod: its own folder, a
// logger that discards (the pod's log is the component's messages).
func (rt Runtime) quietEnv() pipebench.Env {
	return pipebench.Env{Dir: rt.Dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
}

// Sink runs the scenario's sink in its pod (pipebench-load k8s sink), shared by
// every shard (see SinkPod).
func (rt Runtime) Sink(ctx context.Context, p Pod) error {
	reg := rt.Exec.Registry
	sp := SinkPod{InPod: p.InPod}
	sp.Log = rt.log()
	var sink pipebench.Sink
	sp.Start = func(ctx context.Context, run *corev1.ConfigMap) (*SinkStarted, error) {
		plan, err := RunPlan(reg, run)
		if err != nil {
			return nil, err
		}
		spec, cfg := SharedSink(reg, plan.Sink, p.IP)
		if spec == nil {
			return nil, fmt.Errorf("the scenario's sink cannot run in the cluster (sink %v)", plan.Sink)
		}
		f, _ := reg.Sinks.Lookup(plan.Sink.Type)
		s, err := f.New(cfg, rt.quietEnv())
		if err != nil {
			return nil, err
		}
		arr := kpi.NewArrivals(1, nil)
		arr.StartPhase(0, 0)
		arr.SetRunning(0)
		feed := &Feed{Also: arr}
		if err := s.Start(ctx, feed); err != nil {
			return nil, fmt.Errorf("start the %s sink: %w", plan.Sink.Type, err)
		}
		sink = s
		st := &SinkStarted{Endpoint: s.Endpoint(), Feed: feed}
		if m, ok := s.(pipebench.MultiEndpoint); ok {
			st.Endpoints = m.Endpoints()
		}
		if fs, ok := s.(pipebench.FaultSetter); ok {
			st.Faults = func(ctx context.Context, start time.Time) { applyFaults(ctx, fs, plan.Phases, start) }
		}
		st.Counts = func() SinkCounts {
			faulted, unmatched := arr.Totals()
			s := arr.Stats(0, 0)
			return SinkCounts{Received: arr.Delivered(), Duplicates: s.Duplicates, Faulted: faulted, Unmatched: unmatched}
		}
		return st, nil
	}
	err := sp.Main(ctx)
	if sink != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		sink.Shutdown(sctx)
	}
	return err
}

// applyFaults applies the phases' fault policies on the shards' shared
// clock, each from its phase's start (a blast phase has no planned end:
// the next policy follows at once).
func applyFaults(ctx context.Context, fs pipebench.FaultSetter, phases []pipebench.PlanPhase, start time.Time) {
	at := start
	for _, ph := range phases {
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

// SUT runs the scenario's embedded system under test in its pod (pipebench
// k8s sut), shared by every shard (see SUTPod); it exports to the
// in-cluster sink when the run has one.
func (rt Runtime) SUT(ctx context.Context, p Pod) error {
	reg := rt.Exec.Registry
	sp := SUTPod{InPod: p.InPod}
	sp.Log = rt.log()
	var sut pipebench.SUT
	sp.Start = func(ctx context.Context, run *corev1.ConfigMap) (*SUTStarted, error) {
		plan, err := RunPlan(reg, run)
		if err != nil {
			return nil, err
		}
		if plan.SUT == nil {
			return nil, fmt.Errorf("the scenario has no system under test")
		}
		env := rt.quietEnv()
		if p.Sink != "" && plan.Sink != nil {
			if env.Target, env.Targets, _, err = SinkEndpoints(ctx, p.Client, p.Namespace, p.Run, p.Sink, 5*time.Minute); err != nil {
				return nil, err
			}
		}
		f, ok := reg.SUTs.Lookup(plan.SUT.Type)
		if !ok {
			return nil, fmt.Errorf("unknown system under test %q", plan.SUT.Type)
		}
		s, err := f.New(plan.SUT.Config, env)
		if err != nil {
			return nil, err
		}
		if err := s.Start(ctx); err != nil {
			return nil, fmt.Errorf("start the %s system under test: %w", plan.SUT.Type, err)
		}
		sut = s
		st := &SUTStarted{Endpoint: s.Endpoint(), Instances: s.Instances()}
		if m, ok := s.(pipebench.MultiEndpoint); ok {
			st.Endpoints = m.Endpoints()
		}
		return st, nil
	}
	err := sp.Main(ctx)
	if sut != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sut.Shutdown(sctx)
	}
	return err
}
