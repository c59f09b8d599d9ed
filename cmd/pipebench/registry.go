package main

import (
	"sync"

	"github.com/pipebench/pipebench"
	grpcdriver "github.com/pipebench/pipebench/driver/grpc"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	"github.com/pipebench/pipebench/observer/effect"
	procobs "github.com/pipebench/pipebench/observer/process"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	"github.com/pipebench/pipebench/observer/promql"
	"github.com/pipebench/pipebench/payload"
	"github.com/pipebench/pipebench/payload/loglines"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	"github.com/pipebench/pipebench/producer/logfile"
	"github.com/pipebench/pipebench/report"
	csvreport "github.com/pipebench/pipebench/report/csv"
	htmlreport "github.com/pipebench/pipebench/report/html"
	"github.com/pipebench/pipebench/report/jsonreport"
	"github.com/pipebench/pipebench/report/junit"
	"github.com/pipebench/pipebench/report/markdown"
	"github.com/pipebench/pipebench/report/text"
	httpsink "github.com/pipebench/pipebench/sink/http"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	"github.com/pipebench/pipebench/sut/healthevents"
	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/relay"
)

// newRegistry wires every plug-in pipebench ships. Adding a protocol is a
// new folder and one line here; the scenario schema and every list of valid
// names come from this registry.
func newRegistry() (*pipebench.Registry, error) {
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
		reg.Drivers.Register(grpcdriver.Factory()),

		reg.Sinks.Register(httpsink.Factory()),
		reg.Sinks.Register(otlpsink.Factory()),

		reg.SUTs.Register(relay.Factory()),
		reg.SUTs.Register(otelcol.Factory()),
		reg.SUTs.Register(healthevents.Factory()),

		reg.Observers.Register(promobs.Factory()),
		reg.Observers.Register(procobs.Factory()),
		reg.Observers.Register(promql.Factory()),
		reg.Observers.Register(effect.Factory()),
		reg.Observers.Register(effect.PostgresFactory()),
	}
	errs = append(errs, registerReporters()...)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return reg, nil
}

var reportersOnce sync.Once

// registerReporters fills the report package's format list, once per
// process.
func registerReporters() (errs []error) {
	reportersOnce.Do(func() {
		errs = []error{
			report.Register("text", text.New(text.Options{})),
			report.Register("md", markdown.New(markdown.Options{})),
			report.Register("json", jsonreport.New()),
			report.Register("csv", csvreport.New()),
			report.Register("junit", junit.New()),
			report.Register("html", htmlreport.New()),
		}
	})
	return errs
}

// reporterFor returns a registered reporter, registering them first.
func reporterFor(name string) (pipebench.Reporter, bool) {
	registerReporters()
	return report.Lookup(name)
}
