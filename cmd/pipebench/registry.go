package main

import (
	"github.com/pipebench/pipebench"
	httpdriver "github.com/pipebench/pipebench/driver/http"
	otlpdriver "github.com/pipebench/pipebench/driver/otlp"
	procobs "github.com/pipebench/pipebench/observer/process"
	promobs "github.com/pipebench/pipebench/observer/prometheus"
	"github.com/pipebench/pipebench/payload"
	otlpgen "github.com/pipebench/pipebench/payload/otlp"
	httpsink "github.com/pipebench/pipebench/sink/http"
	otlpsink "github.com/pipebench/pipebench/sink/otlp"
	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/relay"
)

// newRegistry wires every plug-in pipebench ships. Adding a protocol is a
// new folder and one line here; the scenario schema and every list of valid
// names come from this registry.
func newRegistry() (*pipebench.Registry, error) {
	reg := pipebench.NewRegistry()
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(reg.Generators.Register(payload.EventFactory()))
	add(reg.Generators.Register(payload.CloudEventsFactory()))
	add(reg.Generators.Register(otlpgen.TracesFactory()))
	add(reg.Generators.Register(otlpgen.MetricsFactory()))
	add(reg.Generators.Register(otlpgen.LogsFactory()))

	add(reg.Drivers.Register(httpdriver.Factory()))
	add(reg.Drivers.Register(otlpdriver.Factory()))

	add(reg.Sinks.Register(httpsink.Factory()))
	add(reg.Sinks.Register(otlpsink.Factory()))

	add(reg.SUTs.Register(relay.Factory()))
	add(reg.SUTs.Register(otelcol.Factory()))

	add(reg.Observers.Register(promobs.Factory()))
	add(reg.Observers.Register(procobs.Factory()))
	if len(errs) > 0 {
		return nil, errs[0]
	}
	return reg, nil
}
