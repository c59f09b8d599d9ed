package report

import (
	"strings"
	"testing"

	"github.com/pipebench/pipebench"
)

// Per-pipeline KPIs get a group of rows each, p2 before p10, with the
// exporter of that pipeline per instance, and none of them lands among
// the observed rows.
func TestPipelineRows(t *testing.T) {
	k := func(name string, v float64, labels ...string) pipebench.KPI {
		m := map[string]string{}
		for i := 0; i+1 < len(labels); i += 2 {
			m[labels[i]] = labels[i+1]
		}
		return pipebench.KPI{Name: name, Labels: m, Value: v, Unit: pipebench.UnitCount}
	}
	r := &pipebench.Result{Phases: []pipebench.PhaseResult{{Name: "load", KPIs: []pipebench.KPI{
		k("delivered", 300),
		k("pipeline_delivered", 100, "pipeline", "p10"),
		k("pipeline_delivered", 100, "pipeline", "p2"),
		k("pipeline_lost", 7, "pipeline", "p2"),
		k("pipeline_lost", 0, "pipeline", "p10"),
		k("per_exporter_queue_size.max", 40, "exporter", "otlp/p2", "instance", "collector-1"),
		k("per_exporter_queue_size.max", 50, "exporter", "otlp/p2", "instance", "collector-0"),
		k("per_exporter_queue_size.max", 0, "exporter", "otlp/p10", "instance", "collector-0"),
	}}}}
	_, rows := Table(r)
	var got []string
	for _, row := range rows {
		if row.Group == "observed" {
			t.Errorf("observed row %s: per-pipeline KPIs belong to their pipeline's rows", row.Label)
		}
		if strings.HasPrefix(row.Group, "pipeline ") {
			got = append(got, row.Group+"|"+row.Label+"|"+strings.Join(row.Cells, ";"))
		}
	}
	want := []string{
		"pipeline p2|delivered|100", "pipeline p2|lost|7", "pipeline p2|exporter queue max|50, 40",
		"pipeline p10|delivered|100", "pipeline p10|lost|0", "pipeline p10|exporter queue max|0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
