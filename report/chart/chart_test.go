package chart

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/pipebench/pipebench/internal/testkit/resulttest"
)

func byID(cs []Chart) map[string]Chart {
	out := map[string]Chart{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

func lineNames(c Chart) []string {
	var out []string
	for _, l := range c.Lines {
		out = append(out, l.Name)
	}
	return out
}

// A run in which the sink refused items: what failed is charted by class
// (nothing of a class that never failed), the backlog and the exporter
// queue each on its own axis, end-to-end latency in the unit that fits,
// the latency distribution, where items were lost, every phase and the
// drain marked.
func TestChartsOfWhatWentWrong(t *testing.T) {
	r := resulttest.WithFaults(resulttest.WithSeries(resulttest.Pipeline("0.162.0", "single", 20000)))
	cs := byID(Build(r))
	for _, id := range []string{"rates", "failures", "backlog", "queue", "e2e", "latency", "memory", "cpu", "distribution", "e2e-distribution", "lost"} {
		if _, ok := cs[id]; !ok {
			t.Errorf("no %s chart", id)
		}
	}
	if got := lineNames(cs["failures"]); !slices.Equal(got, []string{"sends refused", "sink faults"}) {
		t.Errorf("failures: %q", got)
	}
	if got := lineNames(cs["backlog"]); !slices.Equal(got, []string{"backlog"}) {
		t.Errorf("backlog: %q (the exporter queue has its own axis)", got)
	}
	if c := cs["e2e"]; c.Unit != "s" || lineNames(c)[2] != "p99" {
		t.Errorf("e2e: unit %s, lines %q", c.Unit, lineNames(c))
	}
	if c := cs["latency"]; c.Unit != "ms" {
		t.Errorf("latency: unit %s", c.Unit)
	}
	var marks []string
	for _, m := range cs["rates"].Marks {
		marks = append(marks, m.Label)
	}
	if !slices.Equal(marks, []string{"sustained", "backpressure", "recovery", "drain"}) {
		t.Errorf("marks %q", marks)
	}
	if d := cs["distribution"]; d.X != XPercentile || len(d.Lines) != 1 || len(d.Lines[0].Y) != 7 || d.Unit != "ms" {
		t.Errorf("send latency distribution: %+v", d)
	}
	if d := cs["e2e-distribution"]; d.X != XPercentile || len(d.Lines) != 1 || len(d.Lines[0].Y) != 4 || d.Unit != "s" {
		t.Errorf("end-to-end latency distribution: %+v", d)
	}
	l := cs["lost"]
	if !slices.Equal(l.Categories, []string{"sends failed", "at the receiver", "in the pipeline", "after export"}) || len(l.Lines) != 1 {
		t.Fatalf("lost where: %+v", l)
	}
	if y := l.Lines[0].Y; !slices.Equal(y, []float64{1281, 0, 120, 0}) {
		t.Errorf("lost where: %v", y)
	}
	var b bytes.Buffer
	if err := l.SVG(&b); err != nil {
		t.Fatal(err)
	}
	if svg := b.String(); !strings.Contains(svg, ">1,281</text>") || !strings.Contains(svg, ">120</text>") || !strings.Contains(svg, "pipeline accepted 3,598,719 → pipeline exported 3,598,599") {
		t.Errorf("the lost-where chart does not show the losses: %s", svg)
	}
	for _, c := range cs {
		var png bytes.Buffer
		if err := c.PNG(&png); err != nil || png.Len() < 1000 {
			t.Errorf("%s as PNG: %v (%d bytes)", c.ID, err, png.Len())
		}
	}
}

// Overlaid runs: one line per run in the distribution, a bar per run at
// each stage.
func TestOverlaidDistributionAndStages(t *testing.T) {
	a := resulttest.WithFaults(resulttest.WithSeries(resulttest.Pipeline("0.161.0", "single", 18000)))
	b := resulttest.WithFaults(resulttest.WithSeries(resulttest.Pipeline("0.162.0", "single", 20000)))
	cs := byID(Build(a, b))
	if got := lineNames(cs["distribution"]); !slices.Equal(got, []string{"0.161.0", "0.162.0"}) {
		t.Errorf("distribution: %q", got)
	}
	if got := lineNames(cs["lost"]); !slices.Equal(got, []string{"0.161.0", "0.162.0"}) {
		t.Errorf("lost where: %q", got)
	}
}
