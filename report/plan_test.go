package report_test

import (
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
)

func TestFaults(t *testing.T) {
	for _, c := range []struct {
		f    pipebench.FaultPolicy
		want string
	}{
		{pipebench.FaultPolicy{}, "-"},
		{pipebench.FaultPolicy{Pipeline: "p2", ErrorRatio: 0.7, ErrorStatus: 503}, "pipeline p2 only: 70% answered 503"},
		{pipebench.FaultPolicy{RateLimit: 500}, "limit 500/s items"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("%+v reads %q, want %q", c.f, got, c.want)
		}
	}
}

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"phase one":                   "phase one",
		"a\x1b]0;owned\x07b":          "a?]0;owned?b",
		"red \x1b[31mtext\x1b[0m":     "red ?[31mtext?[0m",
		"tab\tand\nnewline stay":      "tab\tand\nnewline stay",
		"c1 \u009b31m and del \x7f":   "c1 ?31m and del ?",
		"carriage\rreturn overwrites": "carriage?return overwrites",
	} {
		if got := report.Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMillisFits(t *testing.T) {
	for ms, want := range map[float64]string{
		0.002: "2 µs", 0.45: "450 µs", 1.25: "1.25 ms", 51.9: "51.9 ms", 10265: "10.3 s", 125000: "2m5s", 0: "0 ms",
	} {
		if got := report.Millis(ms); got != want {
			t.Errorf("Millis(%v) = %q, want %q", ms, got, want)
		}
	}
}

// A producers phase reads as its fleet and the rate it makes.
func TestProfileProducers(t *testing.T) {
	services := pipebench.PlanPhase{Name: "s", Duration: pipebench.Duration(time.Minute), BatchSize: 1,
		Profile: pipebench.Profile{Kind: pipebench.ProfileProducers, Count: 18000, Every: pipebench.Duration(30 * time.Second), Align: pipebench.AlignStaggered}}
	if got := report.Profile(services); got != "18,000 producers every 30s (staggered) = 600/s" {
		t.Errorf("producers read %q", got)
	}
}

// The plan shows a phase's tick beside its profile when the scenario sets
// one, and nothing of it otherwise.
func TestWritePlanShowsTheTick(t *testing.T) {
	ph := pipebench.PlanPhase{Name: "a", Duration: pipebench.Duration(time.Second), MaxInFlight: 10, BatchSize: 1, Items: 100,
		Profile: pipebench.Profile{Kind: pipebench.ProfileConstant, Rate: 100}}
	var plain, ticked strings.Builder
	report.WritePlan(&plain, pipebench.Plan{Phases: []pipebench.PlanPhase{ph}})
	ph.Tick = pipebench.Duration(time.Millisecond)
	report.WritePlan(&ticked, pipebench.Plan{Phases: []pipebench.PlanPhase{ph}})
	if strings.Contains(plain.String(), "tick") {
		t.Errorf("no tick set, yet the plan reads\n%s", plain.String())
	}
	if !strings.Contains(ticked.String(), "constant 100/s, tick 1ms") {
		t.Errorf("tick 1ms not shown beside the profile:\n%s", ticked.String())
	}
}
