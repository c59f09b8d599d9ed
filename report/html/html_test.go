package html_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/browsertest"
	"github.com/pipebench/pipebench/internal/resulttest"
	htmlreport "github.com/pipebench/pipebench/report/html"
)

func run(version string, accepted float64) *pipebench.Result {
	return resulttest.WithSeries(resulttest.Pipeline(version, "single", accepted))
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

// In a real Chromium: the page loads with no console error, every chart has
// data points and drawn lines, the phase boundaries are marked, and the PNG
// export produces an image. A screenshot goes with the test output.
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
				ID     string `json:"id"`
				Points int    `json:"points"`
				Paths  int    `json:"paths"`
				Drawn  int    `json:"drawn"`
				Phases int    `json:"phases"`
			}
			charts := browsertest.Eval[[]chartInfo](t, p, `[...document.querySelectorAll("svg.pb-chart")].map(s => ({
				id: s.id, points: +s.dataset.points,
				paths: s.querySelectorAll("path.pb-line").length,
				drawn: [...s.querySelectorAll("path.pb-line")].filter(l => l.getTotalLength() > 0).length,
				phases: s.querySelectorAll(".pb-phase").length}))`)
			if len(charts) < 5 {
				t.Fatalf("%d charts on the page: %+v", len(charts), charts)
			}
			for _, ch := range charts {
				if ch.Points == 0 || ch.Paths == 0 || ch.Drawn == 0 || ch.Phases != 3 {
					t.Errorf("chart %s: %+v", ch.ID, ch)
				}
				if ch.ID == "chart-rates" && ch.Paths != c.lines {
					t.Errorf("rates chart draws %d lines, want %d", ch.Paths, c.lines)
				}
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
