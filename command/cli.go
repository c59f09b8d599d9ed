// Package command is the pipebench command line: its commands, their flags
// and what they print, calling the packages that do the work. The
// programs in cmd/ call it; it never exits the process (they do, with the
// code it returns).
package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/builtins"
	"github.com/pipebench/pipebench/execute"
	"github.com/pipebench/pipebench/internal/cli/buildinfo"
	"github.com/pipebench/pipebench/internal/cli/cliflag"
	"github.com/pipebench/pipebench/metricsout"
	"github.com/pipebench/pipebench/report"
)

// version is the version set at build time (buildinfo.Version).
var version = buildinfo.Version

// app carries what every command needs.
type app struct {
	ctx context.Context
	// cut is done at a second Ctrl-C: the run abandons its drain, keeps
	// what it measured and exits ExitCut. nil: never.
	cut    context.Context
	stdout io.Writer
	stderr io.Writer
	reg    *pipebench.Registry
	// env looks up the ${VAR} of scenarios; nil: the process's
	// environment. Tests give their own, so that they can run in parallel.
	env func(string) (string, bool)
}

// runCLI runs the command line and returns the process exit code.
func runCLI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return executeWith(ctx, nil, nil, args, stdout, stderr)
}

// executeWith is runCLI with the context of a second signal (see signals)
// and where scenarios' ${VAR} are looked up (nil: the environment).
func executeWith(ctx, cut context.Context, env func(string) (string, bool), args []string, stdout, stderr io.Writer) int {
	reg, err := NewRegistry()
	if err != nil {
		fmt.Fprintf(stderr, "pipebench: %v\n", err)
		return pipebench.ExitFailure
	}
	a := &app{ctx: ctx, cut: cut, stdout: stdout, stderr: stderr, reg: reg, env: env}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err = root.ExecuteContext(ctx)
	if err == nil {
		return pipebench.ExitOK
	}
	var quiet *silentExit
	if errors.As(err, &quiet) {
		return quiet.code
	}
	printError(stderr, err)
	code := pipebench.ExitCode(err)
	if code == pipebench.ExitFailure && cliflag.IsUsage(err) {
		code = pipebench.ExitUsage
	}
	return code
}

// NewRegistry builds the registry of the plug-ins the command line knows:
// builtins.Registry's (no embedded system under test) unless the program's
// main says otherwise (the pipebench command: sut/all.Registry).
var NewRegistry = builtins.Registry

// silentExit carries an exit code whose message was already printed.
type silentExit struct{ code int }

func (s *silentExit) Error() string { return fmt.Sprintf("exit %d", s.code) }

// printError writes err for a person: the message, then a hint if it has
// one. A URL's password in it is replaced by xxxxx.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "pipebench: %s\n", report.Printable(pipebench.RedactText(err.Error())))
	var pe *pipebench.Error
	if errors.As(err, &pe) && pe.Hint != "" {
		fmt.Fprintf(w, "  hint: %s\n", report.Printable(pe.Hint))
	}
}

// reporter returns the reporter for --format, or a usage error naming the
// flag and the valid formats.
func (a *app) reporter(format string) (pipebench.Reporter, error) {
	if _, ok := a.reg.Reporters.Lookup(format); !ok {
		return nil, pipebench.UsageError(fmt.Sprintf("unknown --format %q", format), "valid formats: "+strings.Join(a.reg.Reporters.Names(), ", "), nil)
	}
	return a.reg.Reporter(format)
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pipebench",
		Short: "Load, burst, backpressure, soak and limit tests for event and telemetry pipelines",
		Long: `pipebench runs reproducible load tests against event and telemetry pipelines
(OpenTelemetry Collector gateways and agents, HTTP/CloudEvents gateways, NATS JetStream,
Kafka, gRPC ingest, Prometheus remote write and scrape) and ends every run with a KPI
table: sent, accepted, exported and delivered rates, queue sizes, memory and CPU per
instance, latency percentiles, loss and duplicates.

Start with:  pipebench run            (a built-in quickstart, no setup)
Exit codes:  0 passed, 1 pipebench failed (or the result could not be kept where asked),
             2 bad usage or scenario, 97 gate could not decide a KPI, 98 run invalid (generator
             could not hold the rate), 99 thresholds failed, 130 cut short by a second Ctrl-C or
             SIGQUIT (partial result still written)`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version,
	}
	root.SetFlagErrorFunc(cliflag.Error)
	root.SuggestionsMinimumDistance = 2
	root.AddCommand(a.runCommand(), a.limitCommand(), a.mergeCommand(), a.validateCommand(), a.planCommand(), a.sinkCommand(), a.producersCommand(),
		a.schemaCommand(), a.reportCommand(), a.suiteCommand())
	root.AddCommand(a.historyCommands()...)
	root.AddCommand(a.k8sCommand(), a.versionCommand(), a.fetchCommand())
	a.extend(root)
	a.completions(root)
	nonNegativeDurations(root)
	return root
}

// nonNegativeDurations makes every duration flag of the tree refuse a
// negative duration.
func nonNegativeDurations(cmd *cobra.Command) {
	cliflag.NonNegativeDurations(cmd.Flags())
	cliflag.NonNegativeDurations(cmd.PersistentFlags())
	for _, c := range cmd.Commands() {
		nonNegativeDurations(c)
	}
}

// completions offers, in every command of the tree, the values a shell can
// complete: --format's formats (from the registry), built-in scenarios and
// suites where a command takes one (and files beside them).
func (a *app) completions(cmd *cobra.Command) {
	if cmd.Flags().Lookup("format") != nil {
		cmd.RegisterFlagCompletionFunc("format", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return a.reg.Reporters.Names(), cobra.ShellCompDirectiveNoFileComp
		})
	}
	var names []string
	switch {
	case strings.Contains(cmd.Use, "SUITE"):
		names = builtins.SuiteNames()
	case strings.Contains(cmd.Use, "builtin:NAME"):
		names = builtins.ScenarioNames()
	}
	if names != nil && cmd.ValidArgsFunction == nil {
		cmd.ValidArgsFunction = func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			return names, cobra.ShellCompDirectiveDefault // and files
		}
	}
	for _, c := range cmd.Commands() {
		a.completions(c)
	}
}

// execParams are the run parameters every command that runs a plan
// shares: the registry, the manifest's tool version and arguments, the
// logger (--verbose: what the runner does), messages on stderr, the second
// signal, and where the Result goes.
func (a *app) execParams(verbose bool, keep execute.Keep) execute.Params {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return execute.Params{
		Registry: a.reg, ToolVersion: version, Args: os.Args, Log: a.stderr, Cut: a.cut, Keep: keep,
		Logger: slog.New(slog.NewTextHandler(redacting{a.stderr}, &slog.HandlerOptions{Level: level})),
	}
}

// redacting writes through to w with every URL's password replaced, for
// logs (slog writes a record in one call).
type redacting struct{ w io.Writer }

func (r redacting) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, pipebench.RedactText(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// liveFlags are where a run shows itself while it goes on: a live page,
// Prometheus metrics, OTLP pushes. run and suite run share them.
type liveFlags struct {
	dashboard   string
	metricsAddr string
	linger      time.Duration
	otlpMetrics string
}

// options are the live views of the flags, told to log where they are
// served, with the progress display on log when progress is true.
func (f liveFlags) options(log io.Writer, progress bool) execute.LiveOptions {
	o := execute.LiveOptions{Dashboard: f.dashboard, MetricsAddr: f.metricsAddr, Linger: f.linger, OTLPMetrics: f.otlpMetrics, Log: log}
	if o.OTLPMetrics == "" {
		o.OTLPMetrics = metricsout.EndpointFromEnv() // OTEL_EXPORTER_OTLP_(METRICS_)ENDPOINT
	}
	if progress {
		o.Progress = log
	}
	return o
}

// liveFlagsOn declares the flags of f on a command.
func liveFlagsOn(fl *pflag.FlagSet, f *liveFlags, what string) {
	fl.StringVar(&f.dashboard, "dashboard", "", "serve a live page of the "+what+"'s charts at this address (--dashboard alone: 127.0.0.1, a free port)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve the "+what+"'s own metrics for Prometheus on http://ADDR/metrics, like 127.0.0.1:9464 (port 0: a free one)")
	fl.StringVar(&f.otlpMetrics, "otlp-metrics", "", "push the same metrics as OTLP to this collector every interval: OTLP/HTTP to a URL with a path, like http://collector:4318/v1/metrics, or gRPC to host:port, like 127.0.0.1:4317 (default: $OTEL_EXPORTER_OTLP_METRICS_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT; the other OTEL_EXPORTER_OTLP_* variables, OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are honoured)")
	fl.DurationVar(&f.linger, "metrics-linger", 0, "after the "+what+", keep /metrics up until it was scraped once more (the final values) or this long passed")
	fl.Lookup("dashboard").NoOptDefVal = "127.0.0.1:0"
}

// Main runs the pipebench command line with args (without the program's
// name) until it ends, stopped by the signals execute.Signals handles,
// and returns the process's exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cut, release := execute.Signals(stderr)
	defer release()
	return executeWith(ctx, cut, nil, args, stdout, stderr)
}
