// Package full is the embedded OpenTelemetry Collector with every
// component pipebench embeds (otelcol.Components: the core's, and the
// prometheus and filelog receivers, the attributes, filter, transform,
// span and tail_sampling processors, the prometheusremotewrite exporter,
// the file_storage extension): the child process the otelcol system under
// test starts for any other configuration (otelcol.ChildEnv), and its dry
// run (otelcol.CheckEnv). It is linked by pipebench-sut, the program that
// carries the heavy systems under test, and by the test binaries that start
// it as their own child; the pipebench command does not link it (it would
// add about nine CPU-minutes to a cold build).
package full

import (
	"fmt"

	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/attributesprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/filterprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/spanprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/transformprocessor"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/filelogreceiver"
	"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	otelcolc "go.opentelemetry.io/collector/otelcol"

	"github.com/pipebench/pipebench/internal/proc/childproc"
	"github.com/pipebench/pipebench/sut/otelcol"
	"github.com/pipebench/pipebench/sut/otelcol/collector"
)

func init() { otelcol.SetChecker(dryRun) }

func dryRun(data []byte, vars map[string]string) error {
	return collector.DryRun(data, vars, Factories)
}

// MaybeRunChild runs the full collector and exits, if this process was
// started as it (otelcol.ChildEnv is set), or checks a configuration with
// it and exits (otelcol.CheckEnv); otherwise it returns at once; the core
// collector's variables too (collector.MaybeRunChild). pipebench-sut's
// main calls it first thing (through sut/heavy), and test binaries from
// TestMain.
func MaybeRunChild() {
	collector.MaybeRunChild()
	childproc.RunIfChild(otelcol.ChildEnv, "embedded collector", func(path string) error { return collector.Run(path, Factories) })
	childproc.RunIfChild(otelcol.CheckEnv, "embedded collector's check", otelcol.RunCheck(dryRun))
}

// Factories makes every component of otelcol.Components: the core's and
// the rest.
func Factories() (otelcolc.Factories, error) {
	f, err := collector.Core()
	if err != nil {
		return f, err
	}
	if err := add(f.Receivers, prometheusreceiver.NewFactory(), filelogreceiver.NewFactory()); err != nil {
		return f, err
	}
	if err := add(f.Processors, attributesprocessor.NewFactory(), filterprocessor.NewFactory(), transformprocessor.NewFactory(),
		spanprocessor.NewFactory(), tailsamplingprocessor.NewFactory()); err != nil {
		return f, err
	}
	if err := add(f.Exporters, prometheusremotewriteexporter.NewFactory()); err != nil {
		return f, err
	}
	if f.Extensions, err = otelcolc.MakeFactoryMap[extension.Factory](filestorage.NewFactory()); err != nil {
		return f, err
	}
	return f, nil
}

// add puts factories into m, refusing a type m has already.
func add[F component.Factory](m map[component.Type]F, fs ...F) error {
	more, err := otelcolc.MakeFactoryMap[F](fs...)
	if err != nil {
		return err
	}
	for t, f := range more {
		if _, dup := m[t]; dup {
			return fmt.Errorf("duplicate component factory %q", t)
		}
		m[t] = f
	}
	return nil
}
