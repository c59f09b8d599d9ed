package chart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/pipebench/pipebench"
)

// Palette is the line colours, chosen to stay apart for colour-blind
// readers (Okabe-Ito, then a few more).
var Palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000", "#7F7F7F", "#8C564B"}

var dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

// Size of a drawn chart, in CSS pixels.
const (
	Width  = 720
	height = 260 // plot area plus axes, without the legend
	left   = 64
	right  = 16
	top    = 34
	bottom = 28
	legRow = 18
)

// style returns the colour and dash of line i: a colour per line for one
// run; a colour per run and a dash per series when runs are overlaid.
func (c *Chart) style(i int) (string, string) {
	runs := 0
	for _, l := range c.Lines {
		if l.Run+1 > runs {
			runs = l.Run + 1
		}
	}
	l := c.Lines[i]
	if runs <= 1 {
		return Palette[i%len(Palette)], dashes[(i/len(Palette))%len(dashes)]
	}
	// Index of this line among its run's lines.
	k := 0
	for j := 0; j < i; j++ {
		if c.Lines[j].Run == l.Run {
			k++
		}
	}
	return Palette[l.Run%len(Palette)], dashes[k%len(dashes)]
}

// bounds returns the largest x (time) and y of the chart's data.
func (c *Chart) bounds() (xmax, ymax float64) {
	for _, l := range c.Lines {
		for i, y := range l.Y {
			if i < len(l.X) {
				xmax = math.Max(xmax, l.X[i])
			}
			if !math.IsNaN(y) && !math.IsInf(y, 0) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	for _, m := range c.Marks {
		xmax = math.Max(xmax, m.X)
	}
	switch c.X {
	case XPercentile:
		xmax = MaxX
	case XBars:
		xmax = float64(len(c.Categories))
	}
	if xmax <= 0 {
		xmax = 1
	}
	if ymax <= 0 {
		ymax = 1
	}
	return xmax, ymax
}

// legendLayout places the legend entries in rows under the plot and
// returns their positions and the number of rows.
func (c *Chart) legendLayout() (pos [][2]float64, rows int) {
	x, row := float64(left), 0
	for _, l := range c.Lines {
		w := 28 + 6.6*float64(len([]rune(l.Name))) + 18
		if x+w > Width-right && x > left {
			x, row = left, row+1
		}
		pos = append(pos, [2]float64{x, float64(row)})
		x += w
	}
	if len(c.Lines) > 0 {
		rows = row + 1
	}
	return pos, rows
}

// Height is the drawn height including the legend.
func (c *Chart) Height() int {
	_, rows := c.legendLayout()
	return height + rows*legRow + 8
}

// SVG writes the chart as a standalone SVG element. The output depends only
// on the chart, so it can be compared with golden files. The element
// carries what a script needs to read values back and to zoom: its plot
// area and scales as data attributes on the svg, each line's values as
// data-x and data-y (comma-separated), each mark's position as data-x.
func (c *Chart) SVG(w io.Writer) error {
	var b strings.Builder
	xmax, ymax := c.bounds()
	yticks := niceTicks(ymax, 5)
	ytop := yticks[len(yticks)-1]
	pw, ph := float64(Width-left-right), float64(height-top-bottom)
	sx := func(x float64) float64 { return left + x/xmax*pw }
	sy := func(y float64) float64 { return top + ph - y/ytop*ph }
	H := c.Height()
	kind := [...]string{XElapsed: "time", XPercentile: "percentile", XBars: "bars"}[c.X]

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="pb-chart" id="chart-%s" data-points="%d" data-kind="%s" data-unit="%s" data-xmax="%s" data-ytop="%s" data-plot="%d %d %s %s" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" font-size="11">`,
		esc(c.ID), c.Points(), kind, esc(c.Unit), num(xmax), num(ytop), left, top, f(pw), f(ph), Width, H, Width, H)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<defs><clipPath id="clip-%s"><rect x="%d" y="%d" width="%s" height="%s"/></clipPath></defs>`, esc(c.ID), left, top-2, f(pw), f(ph+4))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`, Width, H)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="600" fill="#1f2328">%s</text>`, left, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="end" fill="#59636e">%s</text>`, Width-right, esc(c.Unit))

	// Grid and y axis labels.
	for _, t := range yticks {
		y := sy(t)
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#e5e7eb"/>`, left, Width-right, f(y), f(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" fill="#59636e">%s</text>`, left-6, f(y+4), Short(t))
	}
	// X axis labels.
	b.WriteString(`<g class="pb-xaxis">`)
	xs, xl := c.xTicks(xmax)
	for i, t := range xs {
		x := sx(t)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#9ca3af"/>`, f(x), f(x), f(top+ph), f(top+ph+4))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#59636e">%s</text>`, f(x), f(top+ph+16), esc(xl[i]))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#9ca3af"/>`, left, Width-right, f(top+ph), f(top+ph))

	// Phase boundaries and the drain.
	b.WriteString(`<g class="pb-marks">`)
	for _, m := range c.Marks {
		x := sx(m.X)
		// A label that would run past the plot goes left of its line.
		tx, anchor := x+4, "start"
		if x+4+6.2*float64(len([]rune(m.Label))) > Width-right {
			tx, anchor = x-4, "end"
		}
		fmt.Fprintf(&b, `<g class="pb-phase" data-x="%s"><line x1="%s" x2="%s" y1="%d" y2="%s" stroke="#6b7280" stroke-dasharray="3 3"/><text x="%s" y="%d" text-anchor="%s" fill="#374151">%s</text></g>`,
			num(m.X), f(x), f(x), top, f(top+ph), f(tx), top+10, anchor, esc(m.Label))
	}
	b.WriteString(`</g>`)

	fmt.Fprintf(&b, `<g class="pb-lines" clip-path="url(#clip-%s)">`, esc(c.ID))
	if c.X == XBars {
		c.bars(&b, sx, sy)
	} else {
		c.lines(&b, sx, sy)
	}
	b.WriteString(`</g>`)

	// Legend.
	pos, _ := c.legendLayout()
	for i, l := range c.Lines {
		color, dash := c.style(i)
		x, y := pos[i][0], float64(height)+pos[i][1]*legRow
		da := ""
		if dash != "" && c.X != XBars {
			da = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/><text x="%s" y="%s" fill="#1f2328">%s</text>`,
			f(x), f(x+22), f(y), f(y), color, da, f(x+28), f(y+4), esc(l.Name))
	}
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

// xTicks returns the x axis' tick positions and labels.
func (c *Chart) xTicks(xmax float64) ([]float64, []string) {
	switch c.X {
	case XPercentile:
		return PercentileTicks()
	case XBars:
		var xs []float64
		for i := range c.Categories {
			xs = append(xs, float64(i)+0.5)
		}
		return xs, c.Categories
	}
	xs := timeTicks(xmax)
	labels := make([]string, len(xs))
	for i, t := range xs {
		labels[i] = Elapsed(t)
	}
	return xs, labels
}

// lines draws each line as a path, with its values for scripts.
func (c *Chart) lines(b *strings.Builder, sx, sy func(float64) float64) {
	for i, l := range c.Lines {
		color, dash := c.style(i)
		var d strings.Builder
		pen := false
		for j := range l.Y {
			y := l.Y[j]
			if math.IsNaN(y) || math.IsInf(y, 0) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd, pen = "M", true
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, f(sx(l.X[j])), f(sy(y)))
		}
		da := ""
		if dash != "" {
			da = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(b, `<path class="pb-line" data-points="%d" data-name="%s" data-x="%s" data-y="%s" d="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s><title>%s</title></path>`,
			len(l.Y), esc(l.Name), nums(l.X), nums(l.Y), d.String(), color, da, esc(l.Name))
		if len(l.Y) == 1 || c.X == XPercentile { // a lone point draws no line; percentiles are points
			for j := range l.Y {
				if !math.IsNaN(l.Y[j]) && !math.IsInf(l.Y[j], 0) {
					fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, f(sx(l.X[j])), f(sy(l.Y[j])), color)
				}
			}
		}
	}
}

// bars draws a group of bars per category, one bar per run, its value
// above it (unclipped: it may stand above the axis' top).
func (c *Chart) bars(b *strings.Builder, sx, sy func(float64) float64) {
	group := sx(1) - sx(0)
	bw := group * 0.7 / float64(len(c.Lines))
	var labels strings.Builder
	for i, l := range c.Lines {
		color, _ := c.style(i)
		for k, v := range l.Y {
			x := sx(float64(k)) + group*0.15 + float64(i)*bw
			y := sy(v)
			note := ""
			if k < len(l.Notes) {
				note = l.Notes[k]
			}
			fmt.Fprintf(b, `<rect class="pb-bar" data-name="%s" data-category="%s" data-y="%s" data-note="%s" x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s: %s</title></rect>`,
				esc(l.Name), esc(c.Categories[k]), num(v), esc(note), f(x), f(y), f(bw*0.92), f(sy(0)-y), color, esc(c.Categories[k]), pipebench.FormatCount(v))
			fill := "#1f2328"
			if v > 0 {
				fill = "#cf222e"
			}
			fmt.Fprintf(&labels, `<text class="pb-value" x="%s" y="%s" text-anchor="middle" fill="%s" font-weight="600">%s</text>`, f(x+bw*0.46), f(y-4), fill, pipebench.FormatCount(v))
		}
	}
	b.WriteString(`</g><g class="pb-values">`)
	b.WriteString(labels.String())
}

func esc(s string) string { return html.EscapeString(s) }

func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

// num is a value for a script: 6 significant digits.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func nums(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = num(v)
	}
	return strings.Join(s, ",")
}

// niceTicks returns 0 and round steps (1, 2 or 5 times a power of ten)
// up to at least max.
func niceTicks(max float64, n int) []float64 {
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := 0.0; ; v += step {
		out = append(out, v)
		if v >= max*(1-1e-9) {
			break
		}
	}
	return out
}

// timeTicks returns round elapsed times (seconds) up to max.
func timeTicks(max float64) []float64 {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200, 86400} {
		step = s
		if max/s <= 8 {
			break
		}
	}
	var out []float64
	for v := 0.0; v <= max+1e-9; v += step {
		out = append(out, v)
	}
	return out
}

// Short formats an axis value: 12k, 1.5M, 0.25.
func Short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e4:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

func trim(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// Elapsed formats seconds since the start: 0s, 45s, 2m, 1m30s, 2h.
func Elapsed(sec float64) string {
	s := int(math.Round(sec))
	h, m, r := s/3600, (s%3600)/60, s%60
	switch {
	case h > 0 && m == 0:
		return fmt.Sprintf("%dh", h)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0 && r == 0:
		return fmt.Sprintf("%dm", m)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, r)
	}
	return fmt.Sprintf("%ds", r)
}
