package main

import (
	"context"
	"fmt"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/dashboard"
	"github.com/pipebench/pipebench/metricsout"
	"github.com/pipebench/pipebench/runner"
)

// liveFlags are where a run shows itself while it goes on: a live page,
// Prometheus metrics, OTLP pushes. run and suite run share them.
type liveFlags struct {
	dashboard   string
	metricsAddr string
	linger      time.Duration
	otlpMetrics string
}

// live is what liveFlags started; its methods do nothing for what was not
// asked for, so callers need no checks.
type live struct {
	dash       *dashboard.Server
	metrics    *metricsout.Exporter
	metricsSrv *metricsout.Server
	pusher     *metricsout.Pusher
	linger     time.Duration
}

// startLive starts what f asks for, for a first run of plan; on an error
// it stops what it had started.
func (a *app) startLive(f liveFlags, plan pipebench.Plan) (*live, error) {
	l := &live{linger: f.linger}
	var err error
	if f.dashboard != "" {
		if l.dash, err = dashboard.Start(f.dashboard); err != nil {
			return nil, err
		}
		fmt.Fprintf(a.stderr, "dashboard: %s\n", l.dash.URL())
	}
	if f.metricsAddr != "" || f.otlpMetrics != "" {
		l.metrics = metricsout.New(plan)
	}
	if f.metricsAddr != "" {
		if l.metricsSrv, err = metricsout.Serve(f.metricsAddr, l.metrics); err != nil {
			l.stop()
			return nil, err
		}
		fmt.Fprintf(a.stderr, "metrics: %s\n", l.metricsSrv.URL())
	}
	if f.otlpMetrics != "" {
		if l.pusher, err = metricsout.PushOTLP(a.ctx, f.otlpMetrics, plan.Interval.D(), l.metrics); err != nil {
			l.stop()
			return nil, err
		}
	}
	return l, nil
}

// next shows the run of another plan from now on (a suite's next case).
func (l *live) next(plan pipebench.Plan) {
	if l.metrics != nil {
		l.metrics.Begin(plan)
	}
	if l.dash != nil {
		l.dash.Begin()
	}
}

// update takes the runner's progress.
func (l *live) update(p runner.Progress) {
	if l.dash != nil {
		l.dash.Update(p)
	}
	if l.metrics != nil {
		l.metrics.Update(p)
	}
}

// finish shows a run's Result (nil: it could not start) as final.
func (l *live) finish(res *pipebench.Result) {
	if l.metrics != nil {
		l.metrics.Finish(res)
	}
	if l.dash != nil && res != nil {
		l.dash.Finish(res)
	}
}

// close pushes the final OTLP values once, keeps /metrics up for its last
// scrape (up to --metrics-linger, or until cut) and lets an open page fetch
// the final state, then stops everything.
func (l *live) close(a *app) {
	if l.pusher != nil {
		// The final values, once; a collector that is gone costs at most 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := l.pusher.Shutdown(ctx); err != nil {
			fmt.Fprintf(a.stderr, "pipebench: pushing the final OTLP metrics: %v\n", err)
		}
		cancel()
		l.pusher = nil
	}
	if l.metricsSrv != nil && l.linger > 0 {
		cut := a.cut
		if cut == nil {
			cut = context.Background()
		}
		select {
		case <-l.metrics.ScrapedFinal():
		case <-time.After(l.linger):
		case <-cut.Done():
		}
	}
	if l.dash != nil {
		// Let an open page fetch the final state once before the server goes.
		time.Sleep(1500 * time.Millisecond)
	}
	l.stop()
}

// stop stops serving at once.
func (l *live) stop() {
	if l.pusher != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		l.pusher.Shutdown(ctx)
		cancel()
	}
	if l.metricsSrv != nil {
		l.metricsSrv.Shutdown(context.Background())
	}
	if l.dash != nil {
		l.dash.Shutdown(context.Background())
	}
}

// liveFlagsOn declares the flags of f on a command.
func liveFlagsOn(fl interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}, f *liveFlags, what string) {
	fl.StringVar(&f.dashboard, "dashboard", "", "serve a live page of the "+what+"'s charts at this address (--dashboard alone: 127.0.0.1, a free port)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the "+what+"'s own metrics for Prometheus on http://ADDR/metrics, like 127.0.0.1:9464 (port 0: a free one)")
	fl.StringVar(&f.otlpMetrics, "otlp-metrics", "", "push the same metrics as OTLP over gRPC to this collector every interval, like 127.0.0.1:4317 or http://collector:4317")
	fl.DurationVar(&f.linger, "metrics-linger", 0, "after the "+what+", keep /metrics up until it was scraped once more (the final values) or this long passed")
}
