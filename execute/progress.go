package execute

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
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
	now       func() time.Time // the clock (time.Now; a test's own)
}

func newProgress(w io.Writer, plan pipebench.Plan) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	return &progress{w: w, tty: tty, plan: plan, lastPhase: -2, every: 5 * time.Second, now: time.Now}
}

func (p *progress) update(pr runner.Progress) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := report.Printable(pr.String())
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
	// Updates come once per interval, give or take scheduling: a line is
	// due when the next update would be late for the period.
	now := p.now()
	if changed || now.Sub(p.lastPrint) >= p.every-p.every/10 {
		fmt.Fprintln(p.w, line)
		p.lastPrint = now
		p.lastPhase = pr.PhaseIndex
	}
}

// done ends the in-place line.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
	}
}
