package runner

import (
	"fmt"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// String is the one-line summary progress displays show:
//
//	[2/3 backpressure] 5s/15s  target 5,000/s  sent 5,100/s  delivered 2,100/s  queue 11  left 20s
func (pr Progress) String() string {
	var b strings.Builder
	if pr.Draining {
		fmt.Fprintf(&b, "[drain] backlog %s", pipebench.FormatCount(pr.Backlog))
	} else {
		fmt.Fprintf(&b, "[%d/%d %s] %s/%s", pr.PhaseIndex+1, pr.Phases, pr.Phase,
			round(pr.PhaseElapsed), round(pr.PhaseDuration))
		if pr.TargetRate > 0 {
			fmt.Fprintf(&b, "  target %s/s", pipebench.FormatCount(pr.TargetRate))
		}
		if pr.RatesKnown {
			fmt.Fprintf(&b, "  sent %s/s", pipebench.FormatCount(pr.SentRate))
		}
	}
	if pr.HasSink && pr.RatesKnown {
		fmt.Fprintf(&b, "  delivered %s/s", pipebench.FormatCount(pr.DeliveredRate))
	}
	if pr.Failed > 0 {
		fmt.Fprintf(&b, "  errors %s", pipebench.FormatCount(float64(pr.Failed)))
	}
	if pr.HeldBack > 0 {
		fmt.Fprintf(&b, "  held back %s", pipebench.FormatCount(float64(pr.HeldBack)))
	}
	if pr.Missed > 0 {
		fmt.Fprintf(&b, "  missed %s", pipebench.FormatCount(float64(pr.Missed)))
	}
	if pr.QueueSize >= 0 {
		fmt.Fprintf(&b, "  queue %s", pipebench.FormatCount(pr.QueueSize))
	}
	if !pr.Draining {
		fmt.Fprintf(&b, "  left %s", round(pr.Remaining))
	}
	return b.String()
}

func round(d time.Duration) string { return pipebench.FormatDuration(d.Round(time.Second)) }
