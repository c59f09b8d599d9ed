package kpi

import (
	"fmt"
	"math"
	"time"

	"github.com/pipebench/pipebench"
)

// DetectOptions tunes the detectors; zero fields take the defaults shown.
type DetectOptions struct {
	// StallPoints is how many consecutive observations with no delivery
	// while sending make a stall (default 5).
	StallPoints int
	// ShortfallRatio and ShortfallPoints: sent below this share of the
	// target for this many observations in a row (default 0.99, 5).
	ShortfallRatio  float64
	ShortfallPoints int
	// BacklogMinGrowth is the growth over a phase, in items, below which a
	// rising backlog is not reported (default 100).
	BacklogMinGrowth float64
	// LeakMinSpan and LeakMBPerHour: memory rising faster than this over at
	// least this long (default 5m, 50 MB/h).
	LeakMinSpan   time.Duration
	LeakMBPerHour float64
	// Paused, when set, says that delivery was paused on purpose at t
	// (the plug-ins' PauseReporters): nothing delivered then is no stall.
	Paused func(t time.Time) bool
}

func (o *DetectOptions) defaults() {
	if o.StallPoints == 0 {
		o.StallPoints = 5
	}
	if o.ShortfallRatio == 0 {
		o.ShortfallRatio = 0.99
	}
	if o.ShortfallPoints == 0 {
		o.ShortfallPoints = 5
	}
	if o.BacklogMinGrowth == 0 {
		o.BacklogMinGrowth = 100
	}
	if o.LeakMinSpan == 0 {
		o.LeakMinSpan = 5 * time.Minute
	}
	if o.LeakMBPerHour == 0 {
		o.LeakMBPerHour = 50
	}
}

// Detect finds the named failure patterns in a Result's series that read
// only the KPI names every plug-in shares: stall, backlog_growth,
// shortfall and leak. Each comes with the time it began and a message in
// plain words. (What one plug-in's own series show, its Detector finds:
// DetectAll.)
func Detect(r *pipebench.Result, o DetectOptions) []pipebench.Detection {
	o.defaults()
	var out []pipebench.Detection
	byName := pipebench.SeriesByName(r.Series)
	one := func(name string) []pipebench.TimeValue {
		if ss := byName[name]; len(ss) > 0 {
			return ss[0].Points
		}
		return nil
	}
	// Stall: sending, nothing delivered.
	sent, delivered := one("sent_rate"), one("delivered_rate")
	if len(sent) > 0 && len(delivered) > 0 {
		run := 0
		for i, p := range delivered {
			s := pipebench.ValueAt(sent, p.T)
			if r.InOutage(p.T) || (o.Paused != nil && o.Paused(p.T)) {
				// Nothing delivered during a planned outage or pause is
				// the plan, not a stall.
				run = 0
				continue
			}
			if s > 0 && p.V == 0 {
				run++
				if run == o.StallPoints {
					began := delivered[i-run+1].T
					out = append(out, pipebench.Detection{Detector: "stall", Series: "delivered_rate", Phase: phaseAt(r, began), Began: began,
						Message: fmt.Sprintf("nothing was delivered for %d observations in a row while %s/s were sent", run, pipebench.FormatCount(s))})
				}
			} else {
				run = 0
			}
		}
	}
	// Shortfall: the generator below its target.
	if target := one("target_rate"); len(target) > 0 && len(sent) > 0 {
		run := 0
		for i, p := range sent {
			tg := pipebench.ValueAt(target, p.T)
			if tg > 0 && p.V < o.ShortfallRatio*tg {
				run++
				if run == o.ShortfallPoints {
					began := sent[i-run+1].T
					whose := "pipebench sent"
					if held := one("held_back_rate"); len(held) > 0 && pipebench.ValueAt(held, p.T) > 0 {
						whose = "the system under test held sends back: pipebench sent"
					}
					out = append(out, pipebench.Detection{Detector: "shortfall", Series: "sent_rate", Phase: phaseAt(r, began), Began: began,
						Message: fmt.Sprintf("%s %s/s against a target of %s/s for %d observations in a row", whose, pipebench.FormatCount(p.V), pipebench.FormatCount(tg), run), Value: p.V / tg})
				}
			} else {
				run = 0
			}
		}
	}
	// Backlog growth within a phase.
	for _, name := range []string{"backlog", "exporter_queue_size"} {
		for _, s := range byName[name] {
			for _, ph := range r.Phases {
				pts := window(s.Points, ph.Started, ph.Ended)
				if len(pts) < 4 {
					continue
				}
				slope := pipebench.Slope(pts)
				growth := pts[len(pts)-1].V - pts[0].V
				if slope > 0 && growth >= o.BacklogMinGrowth && pts[len(pts)-1].V >= maxV(pts)*0.9 {
					out = append(out, pipebench.Detection{Detector: "backlog_growth", Series: s.Key(), Phase: ph.Name, Began: firstRise(pts),
						Message: fmt.Sprintf("%s grew by %s items in phase %s (%.1f items/s) and was still near its peak at the end", s.Key(), pipebench.FormatCount(growth), ph.Name, slope), Value: slope})
				}
			}
		}
	}
	// Memory leak: a steady rise over a long enough span.
	for _, s := range byName["memory_mb"] {
		if len(s.Points) < 10 {
			continue
		}
		span := s.Points[len(s.Points)-1].T.Sub(s.Points[0].T)
		if span < o.LeakMinSpan {
			continue
		}
		if perHour := pipebench.Slope(s.Points) * 3600; perHour > o.LeakMBPerHour {
			out = append(out, pipebench.Detection{Detector: "leak", Series: s.Key(), Began: s.Points[0].T,
				Message: fmt.Sprintf("%s rose %.0f MB/h over %s", s.Key(), perHour, span.Round(time.Second)), Value: perHour})
		}
	}
	return out
}

func window(pts []pipebench.TimeValue, from, to time.Time) []pipebench.TimeValue {
	var out []pipebench.TimeValue
	for _, p := range pts {
		if !p.T.Before(from) && !p.T.After(to) {
			out = append(out, p)
		}
	}
	return out
}

func phaseAt(r *pipebench.Result, t time.Time) string {
	for _, p := range r.Phases {
		if !t.Before(p.Started) && !t.After(p.Ended) {
			return p.Name
		}
	}
	return ""
}

func maxV(pts []pipebench.TimeValue) float64 {
	m := math.Inf(-1)
	for _, p := range pts {
		m = math.Max(m, p.V)
	}
	return m
}

func firstRise(pts []pipebench.TimeValue) time.Time {
	for i := 1; i < len(pts); i++ {
		if pts[i].V > pts[i-1].V {
			return pts[i-1].T
		}
	}
	return pts[0].T
}
