package command

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/producer/promtarget"
)

func (a *app) producersCommand() *cobra.Command {
	cfg := promtarget.DefaultConfig()
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "producers",
		Short: "Serve passive Prometheus scrape targets (P producers x M metrics x S series) for a metric agent to scrape",
		Long: `Serves P producers, each a /metrics endpoint of M metrics x S series, for a
metric agent (a Prometheus agent, a collector's prometheus receiver) that
runs elsewhere and scrapes them. Counters advance on every scrape; churn
renames a fraction of the series every N scrapes. The producers count what
they served on their own /metrics (pipebench_producer_scrapes_total,
pipebench_producer_samples_served_total) and list themselves for HTTP
service discovery at /targets.`,
		Example: `  pipebench producers                                   # the reference's 20 x 1,000 x 10
  pipebench producers --producers 5 --metrics 100 --series 10 --type counter
  pipebench producers --churn-fraction 0.1 --churn-every 4 --separate-ports`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.producers(cfg, every) },
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Listen, "listen", "127.0.0.1:9100", "address to listen on (with --separate-ports, the first producer's; the others take free ports)")
	fl.BoolVar(&cfg.SeparatePorts, "separate-ports", cfg.SeparatePorts, "one port per producer, like real pods")
	fl.IntVar(&cfg.Producers, "producers", cfg.Producers, "number of producers")
	fl.IntVar(&cfg.Metrics, "metrics", cfg.Metrics, "metrics per producer")
	fl.IntVar(&cfg.Series, "series", cfg.Series, "series per metric")
	fl.StringVar(&cfg.Type, "type", cfg.Type, "gauge, counter, histogram or mixed")
	fl.Float64Var(&cfg.ChurnFraction, "churn-fraction", 0, "fraction of series renamed every --churn-every scrapes")
	fl.IntVar(&cfg.ChurnEvery, "churn-every", 0, "scrapes between renames")
	fl.DurationVar(&every, "every", 10*time.Second, "print counts this often")
	return cmd
}

func (a *app) producers(cfg *promtarget.Config, every time.Duration) error {
	if err := cfg.Validate(); err != nil {
		return pipebench.UsageError("bad producers flags", "see pipebench producers --help", err)
	}
	t, err := promtarget.New(*cfg)
	if err != nil {
		return pipebench.UsageError("bad producers flags", "see pipebench producers --help", err)
	}
	if err := t.Start(a.ctx); err != nil {
		return pipebench.UsageError(fmt.Sprintf("cannot listen on %s", cfg.Listen), "choose a free address with --listen", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		t.Shutdown(ctx)
	}()
	targets := t.Targets()
	fmt.Fprintf(a.stdout, "%d producers x %d metrics x %d series (%d samples per scrape round)\n",
		cfg.Producers, cfg.Metrics, cfg.Series, t.SamplesPerScrape()*cfg.Producers)
	fmt.Fprintf(a.stdout, "first target %s, last %s\n", targets[0], targets[len(targets)-1])
	fmt.Fprintf(a.stdout, "HTTP service discovery: %s   own metrics: %s   Ctrl-C to stop\n", t.SDURL(), t.MetricsURL())
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lastSamples uint64
	lastAt := time.Now()
	for {
		select {
		case <-a.ctx.Done():
			return nil
		case <-tick.C:
			var scrapes, samples uint64
			for _, s := range t.Stats() {
				scrapes += s.Scrapes
				samples += s.Samples
			}
			rate := float64(samples-lastSamples) / time.Since(lastAt).Seconds()
			lastSamples, lastAt = samples, time.Now()
			fmt.Fprintf(a.stdout, "scrapes %d  samples served %d (%.0f/s)\n", scrapes, samples, rate)
		}
	}
}
