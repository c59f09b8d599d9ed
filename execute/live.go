package execute

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/dashboard"
	"github.com/pipebench/pipebench/metricsout"
	"github.com/pipebench/pipebench/runner"
)

// LiveOptions are where runs show themselves while they go on: a live
// page, Prometheus metrics, OTLP pushes ("" each: not asked for).
type LiveOptions struct {
	// Dashboard is the address of the live page.
	Dashboard string
	// MetricsAddr serves the run's own metrics for Prometheus on
	// http://ADDR/metrics; Linger keeps it up after the last run until it
	// was scraped once more, or this long passed.
	MetricsAddr string
	Linger      time.Duration
	// OTLPMetrics pushes the same metrics as OTLP there (OTLP/HTTP to a
	// URL with a path, else gRPC: metricsout.PushOTLP).
	OTLPMetrics string
	// Log is told where each view is served.
	Log io.Writer
	// Progress, if set, shows each run's progress as it goes (see
	// progress): redrawn in place on a terminal, else a line every few
	// seconds.
	Progress io.Writer
}

// Live is what LiveOptions started, for one run or a suite's runs in turn.
// Its methods do nothing for what was not asked for, and a nil *Live is
// valid, so callers need no checks.
type Live struct {
	dash       *dashboard.Server
	metrics    *metricsout.Exporter
	metricsSrv *metricsout.Server
	pusher     *metricsout.Pusher
	linger     time.Duration
	progressTo io.Writer
	progress   *progress
}

// StartLive starts what o asks for, for a first run of plan; on an error
// it stops what it had started.
func StartLive(ctx context.Context, o LiveOptions, plan pipebench.Plan) (*Live, error) {
	l := &Live{linger: o.Linger, progressTo: o.Progress}
	if o.Progress != nil {
		l.progress = newProgress(o.Progress, plan)
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	var err error
	if o.Dashboard != "" {
		if l.dash, err = dashboard.Start(o.Dashboard); err != nil {
			return nil, err
		}
		fmt.Fprintf(log, "dashboard: %s\n", l.dash.URL())
	}
	if o.MetricsAddr != "" || o.OTLPMetrics != "" {
		l.metrics = metricsout.New(plan)
	}
	if o.MetricsAddr != "" {
		if l.metricsSrv, err = metricsout.Serve(o.MetricsAddr, l.metrics); err != nil {
			l.Stop()
			return nil, err
		}
		fmt.Fprintf(log, "metrics: %s\n", l.metricsSrv.URL())
	}
	if o.OTLPMetrics != "" {
		if l.pusher, err = metricsout.PushOTLP(ctx, o.OTLPMetrics, plan.Interval.D(), l.metrics); err != nil {
			l.Stop()
			return nil, err
		}
		fmt.Fprintf(log, "otlp metrics: pushing to %s\n", pipebench.RedactURL(o.OTLPMetrics))
	}
	return l, nil
}

// Next shows the run of another plan from now on (a suite's next case).
func (l *Live) Next(plan pipebench.Plan) {
	if l == nil {
		return
	}
	if l.progressTo != nil {
		l.progress = newProgress(l.progressTo, plan)
	}
	if l.metrics != nil {
		l.metrics.Begin(plan)
	}
	if l.dash != nil {
		l.dash.Begin()
	}
}

// Update takes the runner's progress.
func (l *Live) Update(p runner.Progress) {
	if l == nil {
		return
	}
	l.progress.update(p)
	if l.dash != nil {
		l.dash.Update(p)
	}
	if l.metrics != nil {
		l.metrics.Update(p)
	}
}

// Finish shows a run's Result (nil: it could not start) as final.
func (l *Live) Finish(res *pipebench.Result) {
	if l == nil {
		return
	}
	l.progress.done()
	if l.metrics != nil {
		l.metrics.Finish(res)
	}
	if l.dash != nil && res != nil {
		l.dash.Finish(res)
	}
}

// Close pushes the final OTLP values once, keeps /metrics up for its last
// scrape (up to Linger, or until cut is done) and lets an open page fetch
// the final state, then stops everything. Problems go to log.
func (l *Live) Close(cut context.Context, log io.Writer) {
	if l == nil {
		return
	}
	if l.pusher != nil {
		// The final values, once; a collector that is gone costs at most 10 s.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := l.pusher.Shutdown(ctx); err != nil {
			fmt.Fprintf(log, "pipebench: pushing the final OTLP metrics: %v\n", err)
		}
		cancel()
		l.pusher = nil
	}
	if l.metricsSrv != nil && l.linger > 0 {
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
	l.Stop()
}

// Stop stops serving at once.
func (l *Live) Stop() {
	if l == nil {
		return
	}
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
