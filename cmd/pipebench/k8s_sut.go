package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/k8s"
)

// inClusterSUT returns how the plan's embedded system under test runs in
// the cluster: once, in a pod of its own, when it can export to the
// in-cluster sink (or the scenario has no sink); nil when it runs in each
// shard's pod (no system under test, --sut-per-shard, or a sink that runs
// in each shard, like nats). A process observer of the system's processes
// cannot reach them in another pod: that is refused, with what to do.
func inClusterSUT(plan *pipebench.Plan, sink *k8s.SinkSpec, perShard bool) (*k8s.SUTSpec, error) {
	if plan.SUT == nil || perShard || (plan.Sink != nil && sink == nil) {
		return nil, nil
	}
	for _, o := range plan.Observers {
		if o.Type == "process" {
			return nil, pipebench.UsageError(
				fmt.Sprintf("observer %q reads the processes of the system under test, which runs in a pod of its own in the cluster", o.Name),
				"observe its memory and CPU through its metrics (the prometheus observer, e.g. preset otelcol), or give --sut-per-shard to run it in each shard's pod", nil)
		}
	}
	return &k8s.SUTSpec{Type: plan.SUT.Type}, nil
}

// remoteSUT stands, in a shard, for the system under test running in its
// own pod: it starts nothing and says where that one receives and where
// its metrics are (its instances have no PID here).
type remoteSUT struct {
	target    string
	targets   map[string]string
	instances []pipebench.Instance
}

var (
	_ pipebench.SUT           = (*remoteSUT)(nil)
	_ pipebench.MultiEndpoint = (*remoteSUT)(nil)
)

func (s *remoteSUT) Start(context.Context) error        { return nil }
func (s *remoteSUT) Endpoint() string                   { return s.target }
func (s *remoteSUT) Endpoints() map[string]string       { return s.targets }
func (s *remoteSUT) Instances() []pipebench.Instance    { return s.instances }
func (s *remoteSUT) Shutdown(ctx context.Context) error { return nil }

// useInClusterSUT makes this worker's runs send to the system under test
// running in its own pod, found at host (its Service's name), once it is
// ready.
func (a *app) useInClusterSUT(client kubernetes.Interface, ns, run, host string) error {
	target, targets, instances, err := k8s.SUTEndpoints(a.ctx, client, ns, run, host, 5*time.Minute)
	if err != nil {
		return err
	}
	sut := &remoteSUT{target: target, targets: targets, instances: instances}
	return a.rewire(nil, func() pipebench.SUT { return sut }, "system under test", target)
}

func (a *app) k8sSUTCommand() *cobra.Command {
	return a.podCommand("sut", "Run the scenario's system under test inside the cluster for k8s run (reads its run from the environment)", func(ip inPod) error {
		client, ns, dir := ip.client, ip.ns, ip.dir
		p := k8s.SUTPod{InPod: k8s.InPod{Client: client, Namespace: ns, Run: ip.run, Pod: ip.pod, IP: ip.ip, Log: a.stderr}}
		var sut pipebench.SUT
		p.Start = func(ctx context.Context, run *corev1.ConfigMap) (*k8s.SUTStarted, error) {
			plan, err := a.runPlan(dir, run)
			if err != nil {
				return nil, err
			}
			if plan.SUT == nil {
				return nil, fmt.Errorf("the scenario has no system under test")
			}
			env := pipebench.Env{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if host := os.Getenv(k8s.EnvSink); host != "" && plan.Sink != nil {
				if env.Target, env.Targets, _, err = k8s.SinkEndpoints(ctx, client, ns, p.Run, host, 5*time.Minute); err != nil {
					return nil, err
				}
			}
			f, ok := a.reg.SUTs.Lookup(plan.SUT.Type)
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
			st := &k8s.SUTStarted{Endpoint: s.Endpoint(), Instances: s.Instances()}
			if m, ok := s.(pipebench.MultiEndpoint); ok {
				st.Endpoints = m.Endpoints()
			}
			return st, nil
		}
		err := p.Main(a.ctx)
		if sut != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			sut.Shutdown(ctx)
		}
		return err
	})
}

// runPlan compiles the whole plan of the run whose ConfigMap is run, from
// the scenario written into dir under its own file name.
func (a *app) runPlan(dir string, run *corev1.ConfigMap) (*pipebench.Plan, error) {
	file := filepath.Base(run.Data[k8s.KeyFile])
	if file == "." || file == "/" || file == "" {
		file = "scenario.yaml"
	}
	file = filepath.Join(dir, file)
	if err := os.WriteFile(file, []byte(run.Data[k8s.KeyScenario]), 0o600); err != nil {
		return nil, err
	}
	sc, err := a.loadScenario(file)
	if err != nil {
		return nil, err
	}
	d, err := shardDuration(run.Data[k8s.KeyDuration])
	if err != nil {
		return nil, err
	}
	plan, err := compile(sc, d, d > 0, "")
	if err != nil {
		return nil, err
	}
	return &plan, nil
}
