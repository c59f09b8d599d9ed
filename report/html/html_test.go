package html_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/testkit/browsertest"
	"github.com/pipebench/pipebench/internal/testkit/resulttest"
	htmlreport "github.com/pipebench/pipebench/report/html"
)

// run is a three-phase collector run in which the sink refused items in
// the second phase, with end-to-end latency and a drain.
func run(version string, accepted float64) *pipebench.Result {
	return resulttest.WithFaults(resulttest.WithSeries(resulttest.Pipeline(version, "single", accepted)))
}

func render(t *testing.T, results ...*pipebench.Result) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := htmlreport.Write(&b, results...); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// The page is self-contained: no script, style, image or font is fetched
// from anywhere, so it works offline and in a mail attachment.
func TestSelfContained(t *testing.T) {
	page := string(render(t, run("0.162.0", 20000)))
	for _, re := range []string{`<script[^>]+src=`, `<link[^>]+href="http`, `url\(http`, `@import`, `<img[^>]+src="http`} {
		if m := regexp.MustCompile(re).FindString(page); m != "" {
			t.Errorf("the page loads something from outside: %q", m)
		}
	}
	for _, want := range []string{`id="chart-rates"`, `id="chart-queue"`, `id="chart-memory"`, `id="chart-cpu"`, `id="chart-latency"`,
		`class="pb-phase"`, ">backpressure<", "receiver accepted/s", "20,000"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// Text from the result (scenario names, messages) is escaped everywhere,
// in the page and inside the SVG charts.
func TestEscapes(t *testing.T) {
	r := run("<script>alert(1)</script>", 1000)
	r.Manifest.Scenario = `a"b<c>`
	r.Phases[1].Name = "<b>bold</b>"
	page := string(render(t, r))
	if strings.Contains(page, "<script>alert") || strings.Contains(page, "<b>bold</b>") || strings.Contains(page, `a"b<c>`) {
		t.Error("unescaped text from the result in the page")
	}
}

// The charts a reader needs to see what went wrong without reading the
// table, for a run that had refusals and end-to-end latency.
var wantCharts = []string{"chart-rates", "chart-failures", "chart-backlog", "chart-queue", "chart-e2e", "chart-latency",
	"chart-memory", "chart-cpu", "chart-distribution", "chart-e2e-distribution", "chart-lost"}

// In a real Chromium: the page loads with no console error, every chart is
// there with data points and drawn lines (or bars), every phase and the
// drain are marked on the charts over time, the values under the pointer
// show, dragging zooms every chart over time (double-click zooms out), and
// the PNG export produces an image. A screenshot goes with the test
// output.
func TestInChromium(t *testing.T) {
	for _, c := range []struct {
		name    string
		results []*pipebench.Result
		lines   int // in the rates chart
	}{
		{"single", []*pipebench.Result{run("0.162.0", 20000)}, 6},
		{"overlay", []*pipebench.Result{run("0.161.0", 18000), run("0.162.0", 20000)}, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report.html")
			if err := os.WriteFile(path, render(t, c.results...), 0o644); err != nil {
				t.Fatal(err)
			}
			p := browsertest.Open(t, "file://"+path)
			type chartInfo struct {
				ID     string   `json:"id"`
				Kind   string   `json:"kind"`
				Points int      `json:"points"`
				Paths  int      `json:"paths"`
				Drawn  int      `json:"drawn"`
				Bars   int      `json:"bars"`
				Phases []string `json:"phases"`
			}
			charts := browsertest.Eval[[]chartInfo](t, p, `[...document.querySelectorAll("svg.pb-chart")].map(s => ({
				id: s.id, kind: s.dataset.kind, points: +s.dataset.points,
				paths: s.querySelectorAll("path.pb-line").length,
				drawn: [...s.querySelectorAll("path.pb-line")].filter(l => l.getTotalLength() > 0).length,
				bars: [...s.querySelectorAll("rect.pb-bar")].filter(b => b.getBBox().height > 0).length,
				phases: [...s.querySelectorAll(".pb-phase text")].map(t => t.textContent)}))`)
			var ids []string
			for _, ch := range charts {
				ids = append(ids, ch.ID)
				switch {
				case ch.Points == 0:
					t.Errorf("chart %s has no data", ch.ID)
				case ch.Kind == "bars" && ch.Bars == 0, ch.Kind != "bars" && (ch.Paths == 0 || ch.Drawn == 0):
					t.Errorf("chart %s draws nothing: %+v", ch.ID, ch)
				case ch.Kind == "time" && strings.Join(ch.Phases, ",") != "sustained,backpressure,recovery,drain":
					t.Errorf("chart %s marks %q", ch.ID, ch.Phases)
				}
				if ch.ID == "chart-rates" && ch.Paths != c.lines {
					t.Errorf("rates chart draws %d lines, want %d", ch.Paths, c.lines)
				}
			}
			for _, id := range wantCharts {
				if !slices.Contains(ids, id) {
					t.Errorf("no %s among %q", id, ids)
				}
			}

			// Values on hover: the pointer over the middle of the
			// failures chart shows the refusals at that time.
			tip := hover(t, p, "chart-failures", 0.5)
			if !strings.Contains(tip, "sends refused: 400 spans/s") || !strings.Contains(tip, "sink faults") {
				t.Errorf("tooltip over the failures chart: %q", tip)
			}
			if tip := hover(t, p, "chart-distribution", 0.5); !strings.Contains(tip, "99%") || !strings.Contains(tip, "51.9 ms") {
				t.Errorf("tooltip over the send latency distribution: %q", tip)
			}
			if tip := hover(t, p, "chart-e2e-distribution", 0.5); !strings.Contains(tip, "10.3 s") {
				t.Errorf("tooltip over the end-to-end latency distribution: %q", tip)
			}
			if tip := hover(t, p, "chart-lost", 0.1); !strings.Contains(tip, "sends failed") || !strings.Contains(tip, "1,281 spans") {
				t.Errorf("tooltip over where items were lost: %q", tip)
			}

			// Zoom: a drag over the middle half of the rates chart
			// zooms every chart over time; a double-click zooms out.
			before := browsertest.Eval[string](t, p, `document.querySelector("#chart-latency .pb-xaxis text").textContent`)
			drag(t, p, "chart-rates", 0.25, 0.5)
			zoom := browsertest.Eval[string](t, p, `document.body.dataset.zoom`)
			after := browsertest.Eval[string](t, p, `document.querySelector("#chart-latency .pb-xaxis text").textContent`)
			if zoom == "" || after == before {
				t.Errorf("zoom %q: the latency chart's axis starts at %q, before %q", zoom, after, before)
			}
			p.Screenshot(t, "report-"+c.name+"-zoomed.png")
			browsertest.Eval[bool](t, p, `(() => { const s = document.getElementById("chart-rates"), r = s.getBoundingClientRect();
				s.dispatchEvent(new MouseEvent("dblclick", {bubbles: true, clientX: r.left + r.width / 2, clientY: r.top + r.height / 3})); return true })()`)
			if z := browsertest.Eval[string](t, p, `document.body.dataset.zoom`); z != "" {
				t.Errorf("after a double-click the zoom is %q", z)
			}

			png := browsertest.Eval[string](t, p, `pbPNG("rates")`)
			if !strings.HasPrefix(png, "data:image/png;base64,") || len(png) < 5000 {
				t.Errorf("PNG export: %.60q (%d bytes)", png, len(png))
			}
			svg := browsertest.Eval[string](t, p, `pbSVG("memory")`)
			if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, "collector-1") {
				t.Errorf("SVG export: %.80q", svg)
			}
			p.Screenshot(t, "report-"+c.name+".png")
			if errs := p.Errors(); len(errs) > 0 {
				t.Errorf("console errors: %q", errs)
			}
		})
	}
}

// hover moves the pointer over chart id at fraction fx of its plot's
// width, a third down, and returns the tooltip's text.
func hover(t *testing.T, p *browsertest.Page, id string, fx float64) string {
	t.Helper()
	return browsertest.Eval[string](t, p, `(() => {
		const s = document.getElementById(`+strconv.Quote(id)+`); s.scrollIntoView();
		const [l, top, w, h] = s.dataset.plot.split(" ").map(Number), m = s.getScreenCTM();
		const x = m.a * (l + `+strconv.FormatFloat(fx, 'f', -1, 64)+` * w) + m.e, y = m.d * (top + h / 3) + m.f;
		(document.elementFromPoint(x, y) || s).dispatchEvent(new MouseEvent("mousemove", {bubbles: true, clientX: x, clientY: y}));
		const tip = document.getElementById("pb-tip");
		return tip.hidden ? "" : tip.innerText.replace(/\n/g, " | ");
	})()`)
}

// drag presses the button at fraction from of chart id's plot width,
// moves to fraction to and releases it.
func drag(t *testing.T, p *browsertest.Page, id string, from, to float64) {
	t.Helper()
	browsertest.Eval[bool](t, p, `(() => {
		const s = document.getElementById(`+strconv.Quote(id)+`); s.scrollIntoView();
		const [l, top, w, h] = s.dataset.plot.split(" ").map(Number), m = s.getScreenCTM();
		const at = (f) => ({bubbles: true, button: 0, clientX: m.a * (l + f * w) + m.e, clientY: m.d * (top + h / 2) + m.f});
		s.dispatchEvent(new MouseEvent("mousedown", at(`+strconv.FormatFloat(from, 'f', -1, 64)+`)));
		document.dispatchEvent(new MouseEvent("mousemove", at(`+strconv.FormatFloat(to, 'f', -1, 64)+`)));
		document.dispatchEvent(new MouseEvent("mouseup", at(`+strconv.FormatFloat(to, 'f', -1, 64)+`)));
		return true;
	})()`)
}

// BenchmarkWrite renders the page of a three-phase run with 15 series of 36
// points, and of a long soak (15 series of 4,096 points, the most the
// runner keeps per series).
func BenchmarkWrite(b *testing.B) {
	short := run("0.162.0", 20000)
	long := run("0.162.0", 20000)
	for i := range long.Series {
		s := &long.Series[i]
		base := s.Points
		s.Points = nil
		for k := 0; k < 4096; k++ {
			p := base[k%len(base)]
			p.T = long.Manifest.Started.Add(time.Duration(k) * 5 * time.Second)
			s.Points = append(s.Points, p)
		}
	}
	for _, c := range []struct {
		name string
		r    *pipebench.Result
	}{{"3phases", short}, {"soak4096points", long}} {
		b.Run(c.name, func(b *testing.B) {
			var size int
			for b.Loop() {
				var buf bytes.Buffer
				if err := htmlreport.Write(&buf, c.r); err != nil {
					b.Fatal(err)
				}
				size = buf.Len()
			}
			b.ReportMetric(float64(size)/1024, "page-KiB")
		})
	}
}
