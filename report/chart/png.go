//go:build !pipebench_nopng

package chart

import (
	"image/color"
	"io"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// HasPNG tells that this build draws PNG images: a build with the tag
// pipebench_nopng (the Kubernetes shards' image, where gonum/plot and
// its fonts are a sixth of the program) leaves the renderer out.
const HasPNG = true

// PNG writes the chart as a PNG image (drawn with gonum/plot), for docs
// and slides where an SVG will not do.
func (c *Chart) PNG(w io.Writer) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.Y.Label.Text = c.Unit
	p.Y.Min = 0
	p.Y.Tick.Marker = shortTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	xmax, ymax := c.bounds()
	yticks := niceTicks(ymax, 5)
	ytop := yticks[len(yticks)-1]
	p.Y.Max = ytop
	switch c.X {
	case XElapsed:
		p.X.Label.Text = "elapsed"
		p.X.Tick.Marker = elapsedTicks{}
	case XPercentile:
		p.X.Label.Text = "percentile"
		p.X.Tick.Marker = newFixedTicks(c.xTicks(xmax))
		p.X.Min, p.X.Max = 0, MaxX
	case XBars:
		p.X.Tick.Marker = newFixedTicks(c.xTicks(xmax))
		p.X.Min, p.X.Max = 0, xmax
		return c.pngBars(w, p)
	}
	for _, m := range c.Marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.X, Y: 0}, {X: m.X, Y: ytop}})
		if err != nil {
			return err
		}
		l.LineStyle.Color = color.RGBA{0x6b, 0x72, 0x80, 0xff}
		l.LineStyle.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		p.Add(l)
	}
	for i, ln := range c.Lines {
		xys := make(plotter.XYs, 0, len(ln.X))
		for j := range ln.X {
			xys = append(xys, plotter.XY{X: ln.X[j], Y: ln.Y[j]})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			continue // NaN or infinite values: leave the line out
		}
		col, dash := c.style(i)
		l.LineStyle.Color = hexColor(col)
		l.LineStyle.Width = vg.Points(1.5)
		for _, d := range strings.Fields(dash) {
			n, _ := strconv.ParseFloat(d, 64)
			l.LineStyle.Dashes = append(l.LineStyle.Dashes, vg.Points(n))
		}
		p.Add(l)
		p.Legend.Add(ln.Name, l)
	}
	return save(w, p)
}

// pngBars draws a bar chart: a group per category, a bar per line.
func (c *Chart) pngBars(w io.Writer, p *plot.Plot) error {
	width := vg.Points(300 / float64(len(c.Categories)*len(c.Lines)))
	for i, ln := range c.Lines {
		bars, err := plotter.NewBarChart(plotter.Values(ln.Y), width)
		if err != nil {
			return err
		}
		col, _ := c.style(i)
		bars.Color = hexColor(col)
		bars.LineStyle.Width = 0
		bars.XMin = 0.5
		bars.Offset = width * vg.Length(float64(i)-float64(len(c.Lines)-1)/2)
		p.Add(bars)
		p.Legend.Add(ln.Name, bars)
	}
	return save(w, p)
}

func save(w io.Writer, p *plot.Plot) error {
	wt, err := p.WriterTo(8*vg.Inch, 3.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
}

// fixedTicks are ticks at given positions with given labels.
type fixedTicks struct {
	xs     []float64
	labels []string
}

func newFixedTicks(xs []float64, labels []string) fixedTicks { return fixedTicks{xs, labels} }

func (t fixedTicks) Ticks(float64, float64) []plot.Tick {
	out := make([]plot.Tick, len(t.xs))
	for i := range t.xs {
		out[i] = plot.Tick{Value: t.xs[i], Label: t.labels[i]}
	}
	return out
}

func hexColor(s string) color.Color {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 0xff}
}

type elapsedTicks struct{}

func (elapsedTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range timeTicks(max) {
		if t >= min {
			out = append(out, plot.Tick{Value: t, Label: Elapsed(t)})
		}
	}
	return out
}

type shortTicks struct{}

func (shortTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range niceTicks(max, 5) {
		out = append(out, plot.Tick{Value: t, Label: Short(t)})
	}
	return out
}
