package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/runner"
)

// progress shows a run as it goes: one line redrawn in place on a terminal,
// or a plain line every few seconds (and at every phase change) when the
// output is a file or a CI log.
type progress struct {
	mu        sync.Mutex
	w         io.Writer
	tty       bool
	plan      pipebench.Plan
	lastPhase int
	lastPrint time.Time
	every     time.Duration
	width     int
}

func newProgress(w io.Writer, plan pipebench.Plan) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	return &progress{w: w, tty: tty, plan: plan, lastPhase: -2, every: 5 * time.Second}
}

func (p *progress) update(pr runner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := p.format(pr)
	if p.tty {
		pad := ""
		if n := p.width - len(line); n > 0 {
			pad = strings.Repeat(" ", n)
		}
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, pad)
		return
	}
	changed := pr.PhaseIndex != p.lastPhase
	if changed || time.Since(p.lastPrint) >= p.every {
		fmt.Fprintln(p.w, line)
		p.lastPrint = time.Now()
		p.lastPhase = pr.PhaseIndex
	}
}

func (p *progress) format(pr runner.Progress) string {
	var b strings.Builder
	if pr.Draining {
		fmt.Fprintf(&b, "[drain] backlog %s", groupDigits(pr.Backlog))
	} else {
		fmt.Fprintf(&b, "[%d/%d %s] %s/%s", pr.PhaseIndex+1, pr.Phases, pr.Phase,
			round(pr.PhaseElapsed), pipebench.FormatDuration(pr.PhaseDuration))
		fmt.Fprintf(&b, "  target %s/s  sent %s/s", groupDigits(pr.TargetRate), groupDigits(pr.SentRate))
	}
	fmt.Fprintf(&b, "  delivered %s/s", groupDigits(pr.DeliveredRate))
	if pr.Failed > 0 {
		fmt.Fprintf(&b, "  errors %s", groupDigits(float64(pr.Failed)))
	}
	if pr.Dropped > 0 {
		fmt.Fprintf(&b, "  dropped %s", groupDigits(float64(pr.Dropped)))
	}
	if pr.QueueSize >= 0 {
		fmt.Fprintf(&b, "  queue %s", groupDigits(pr.QueueSize))
	}
	if !pr.Draining {
		fmt.Fprintf(&b, "  left %s", round(pr.Remaining))
	}
	return b.String()
}

// done ends the in-place line.
func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}

func round(d time.Duration) string { return pipebench.FormatDuration(d.Round(time.Second)) }

// groupDigits prints n rounded, with thousands separators: 12,345.
func groupDigits(n float64) string {
	neg := n < 0
	if neg {
		n = -n
	}
	s := fmt.Sprintf("%.0f", n)
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
