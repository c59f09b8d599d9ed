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

// PNG writes the chart as a PNG image (drawn with gonum/plot), for docs
// and slides where an SVG will not do.
func (c *Chart) PNG(w io.Writer) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "elapsed"
	p.Y.Label.Text = c.Unit
	p.Y.Min = 0
	p.X.Tick.Marker = elapsedTicks{}
	p.Y.Tick.Marker = shortTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	_, ymax := c.bounds()
	yticks := niceTicks(ymax, 5)
	ytop := yticks[len(yticks)-1]
	p.Y.Max = ytop
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
	wt, err := p.WriterTo(8*vg.Inch, 3.5*vg.Inch, "png")
	if err != nil {
		return err
	}
	_, err = wt.WriteTo(w)
	return err
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
