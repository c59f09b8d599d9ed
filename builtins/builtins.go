// Package builtins is every plug-in pipebench ships but the embedded
// systems under test (generators, drivers, sinks, observers, reporters),
// wired into one Registry, and the built-in scenarios and suites
// (builtin:NAME). The embedded systems under test are added by one call
// (sut/all.Register; sut/all.Registry is both). A Go program runs a
// scenario with them in a few lines:
//
//	reg, _ := all.Registry()
//	sc, _ := builtins.Scenario("builtin:quickstart", reg)
//	plan, _ := scenario.Compile(sc)
//	res, _ := runner.Run(ctx, runner.Params{Plan: plan, Registry: reg})
//
// Embedded systems under test that run as child processes need
// all.MaybeRunChild called first thing in main (the heavy ones run in
// pipebench-sut; a test binary calls internal/testkit/children.MaybeRun).
package builtins

import (
	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	kafkadriver "github.com/pipebench/pipebench/driver/kafka"
	mongodriver "github.com/pipebench/pipebench/driver/mongodb"
	natsdriver "github.com/pipebench/pipebench/driver/nats"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	promrwdriver "github.com/pipebench/pipebench/driver/promrw"
	promscrapedriver "github.com/pipebench/pipebench/driver/promscrape"
	"github.com/pipebench/pipebench/observer/effect"
	effectkube "github.com/pipebench/pipebench/observer/effect-kube"
	kafkaobs "github.com/pipebench/pipebench/observer/kafka"
	natsobs "github.com/pipebench/pipebench/observer/nats"
	procobs "github.com/pipebench/pipebench/observer/process"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	"github.com/pipebench/pipebench/observer/promql"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/payload/loglines"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/producer/logfile"
	"github.com/pipebench/pipebench/producer/promtarget"
	csvreport "github.com/pipebench/pipebench/report/csv"
	htmlreport "github.com/pipebench/pipebench/report/html"
	"github.com/pipebench/pipebench/report/jsonreport"
	"github.com/pipebench/pipebench/report/junit"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/report/text"
	httpsink "github.com/pipebench/pipebench/sink/http"
	kafkasink "github.com/pipebench/pipebench/sink/kafka"
	natssink "github.com/pipebench/pipebench/sink/nats"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	promrwsink "github.com/pipebench/pipebench/sink/promrw"
)

// Registry wires every plug-in pipebench ships into a new Registry. Adding
// a protocol is a new folder and one line here; the scenario schema and
// every list of valid names come from this registry.
func Registry() (*pipebench.Registry, error) {
	reg := pipebench.NewRegistry()
	errs := []error{
		reg.Generators.Register(payload.EventFactory()),
		reg.Generators.Register(payload.CloudEventsFactory()),
		reg.Generators.Register(otlpgen.TracesFactory()),
		reg.Generators.Register(otlpgen.MetricsFactory()),
		reg.Generators.Register(otlpgen.LogsFactory()),
		reg.Generators.Register(loglines.Factory()),
		reg.Generators.Register(payload.MessageFactory()),

		reg.Drivers.Register(httpdriver.Factory()),
		reg.Drivers.Register(otlpdriver.Factory()),
		reg.Drivers.Register(logfile.Factory()),
		reg.Drivers.Register(promtarget.DriverFactory()),
		reg.Drivers.Register(natsdriver.Factory()),
		reg.Drivers.Register(grpcdriver.Factory()),
		reg.Drivers.Register(promrwdriver.Factory()),
		reg.Drivers.Register(promscrapedriver.Factory()),
		reg.Drivers.Register(kafkadriver.Factory()),
		reg.Drivers.Register(mongodriver.Factory()),

		reg.Sinks.Register(httpsink.Factory()),
		reg.Sinks.Register(otlpsink.Factory()),
		reg.Sinks.Register(natssink.Factory()),
		reg.Sinks.Register(promrwsink.Factory()),
		reg.Sinks.Register(kafkasink.Factory()),

		reg.Observers.Register(promobs.Factory()),
		reg.Observers.Register(procobs.Factory()),
		reg.Observers.Register(natsobs.Factory()),
		reg.Observers.Register(promql.Factory()),
		reg.Observers.Register(effect.Factory()),
		reg.Observers.Register(effect.PostgresFactory()),
		reg.Observers.Register(effectkube.Factory()),
		reg.Observers.Register(kafkaobs.Factory()),

		reg.Reporters.Register(reporter("text", "the terminal KPI table", text.New(text.Options{}))),
		reg.Reporters.Register(reporter("md", "markdown tables in the reference reports' shape", markdown.New(markdown.Options{}))),
		reg.Reporters.Register(reporter("json", "the whole Result", jsonreport.New())),
		reg.Reporters.Register(reporter("csv", "one line per phase and KPI", csvreport.New())),
		reg.Reporters.Register(reporter("junit", "thresholds as JUnit test cases, for CI", junit.New())),
		reg.Reporters.Register(reporter("html", "one offline page with the table and charts", htmlreport.New())),
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// reporter registers a stateless reporter as a factory.
func reporter(name, doc string, r pipebench.Reporter) pipebench.Factory[pipebench.Reporter] {
	return pipebench.NewSimpleFactory(name, doc, func(pipebench.Env) (pipebench.Reporter, error) { return r, nil })
}
