package chart

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
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

func (c *Chart) bounds() (xmax, ymax float64) {
	for _, l := range c.Lines {
		for i := range l.X {
			xmax = math.Max(xmax, l.X[i])
			if !math.IsNaN(l.Y[i]) && !math.IsInf(l.Y[i], 0) {
				ymax = math.Max(ymax, l.Y[i])
			}
		}
	}
	for _, m := range c.Marks {
		xmax = math.Max(xmax, m.X)
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
// on the chart, so it can be compared with golden files.
func (c *Chart) SVG(w io.Writer) error {
	var b strings.Builder
	xmax, ymax := c.bounds()
	yticks := niceTicks(ymax, 5)
	ytop := yticks[len(yticks)-1]
	xticks := timeTicks(xmax)
	pw, ph := float64(Width-left-right), float64(height-top-bottom)
	sx := func(x float64) float64 { return left + x/xmax*pw }
	sy := func(y float64) float64 { return top + ph - y/ytop*ph }
	H := c.Height()

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="pb-chart" id="chart-%s" data-points="%d" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" font-size="11">`,
		esc(c.ID), c.Points(), Width, H, Width, H)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
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
	for _, t := range xticks {
		x := sx(t)
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="#9ca3af"/>`, f(x), f(x), f(top+ph), f(top+ph+4))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#59636e">%s</text>`, f(x), f(top+ph+16), Elapsed(t))
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%s" y2="%s" stroke="#9ca3af"/>`, left, Width-right, f(top+ph), f(top+ph))

	// Phase boundaries.
	for _, m := range c.Marks {
		x := sx(m.X)
		fmt.Fprintf(&b, `<g class="pb-phase"><line x1="%s" x2="%s" y1="%d" y2="%s" stroke="#6b7280" stroke-dasharray="3 3"/><text x="%s" y="%d" fill="#374151">%s</text></g>`,
			f(x), f(x), top, f(top+ph), f(x+4), top+10, esc(m.Label))
	}

	// Lines.
	for i, l := range c.Lines {
		color, dash := c.style(i)
		var d strings.Builder
		pen := false
		for j := range l.X {
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
		fmt.Fprintf(&b, `<path class="pb-line" data-points="%d" d="%s" fill="none" stroke="%s" stroke-width="1.8" stroke-linejoin="round"%s><title>%s</title></path>`,
			len(l.X), d.String(), color, da, esc(l.Name))
		if len(l.X) == 1 { // a lone point draws no line
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`, f(sx(l.X[0])), f(sy(l.Y[0])), color)
		}
	}

	// Legend.
	pos, _ := c.legendLayout()
	for i, l := range c.Lines {
		color, dash := c.style(i)
		x, y := pos[i][0], float64(height)+pos[i][1]*legRow
		da := ""
		if dash != "" {
			da = fmt.Sprintf(` stroke-dasharray="%s"`, dash)
		}
		fmt.Fprintf(&b, `<line x1="%s" x2="%s" y1="%s" y2="%s" stroke="%s" stroke-width="2.5"%s/><text x="%s" y="%s" fill="#1f2328">%s</text>`,
			f(x), f(x+22), f(y), f(y), color, da, f(x+28), f(y+4), esc(l.Name))
	}
	b.WriteString(`</svg>`)
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

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
