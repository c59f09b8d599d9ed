package kpi

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// The detectors that say whose limit kept sends from being made on time.
const (
	// DetectSaturated: the system under test held sends back (max_in_flight
	// answers outstanding, no free connection, a connect refused). A
	// result about the system: the run stays valid.
	DetectSaturated = "saturated"
	// DetectGeneratorLimit: pipebench itself could not keep the plan. The
	// run is invalid, and the detection says so in the same words.
	DetectGeneratorLimit = "generator_limit"
)

// HeldAfter is the KPI that says how long into its phase the system first
// held an item back (seconds).
const HeldAfter = "held_back.after"

// Saturation returns, for each phase of res, whose limit kept its sends
// from being made on time: a DetectSaturated detection for a phase whose
// items the system under test held back (when it began, the rate the
// system took from then on, how many it held back and why), and a
// DetectGeneratorLimit one for each reason in invalid that names one of
// res's phases (pipebench's own limit). Invalid are the validity reasons
// of the run (Validity's, "phase NAME: ...").
func Saturation(res *pipebench.Result, invalid []string) []pipebench.Detection {
	var out []pipebench.Detection
	for i := range res.Phases {
		p := &res.Phases[i]
		held, _ := p.Get("held_back")
		if held <= 0 {
			continue
		}
		began := p.Started
		if after, ok := p.Get(HeldAfter); ok {
			began = p.Started.Add(time.Duration(after * float64(time.Second)))
		}
		rate := takenRate(res, p, began)
		planned, _ := p.Get("target_rate")
		secs := p.Ended.Sub(p.Started).Seconds()
		var why []string
		for _, k := range p.All("held_back") {
			if r := k.Labels["reason"]; r != "" {
				w := heldWords(r)
				if r == HeldMaxInFlight && i < len(res.Plan.Phases) && res.Plan.Phases[i].MaxInFlight > 0 {
					w = fmt.Sprintf("max_in_flight (%s) answers outstanding", pipebench.FormatCount(float64(res.Plan.Phases[i].MaxInFlight)))
				}
				why = append(why, fmt.Sprintf("%s: %s", w, pipebench.FormatCount(k.Value)))
			}
		}
		msg := fmt.Sprintf("system under test saturated at %s/s: it held back %s items from %s into phase %s (%s)",
			pipebench.FormatCount(rate), pipebench.FormatCount(held), pipebench.FormatDuration(began.Sub(p.Started).Round(100*time.Millisecond)), p.Name, strings.Join(why, "; "))
		if planned > 0 && secs > 0 {
			msg += fmt.Sprintf(", %.0f%% of the %s planned at %s/s", 100*held/(planned*secs), pipebench.FormatCount(planned*secs), pipebench.FormatCount(planned))
		}
		out = append(out, pipebench.Detection{Detector: DetectSaturated, Series: "held_back_rate", Phase: p.Name, Began: began, Message: msg, Value: rate})
	}
	for _, why := range invalid {
		rest, ok := strings.CutPrefix(why, "phase ")
		if !ok {
			continue
		}
		name, msg, ok := strings.Cut(rest, ": ")
		if !ok || !strings.Contains(msg, "pipebench") {
			continue
		}
		name, _, _ = strings.Cut(name, ", shard ")
		for i := range res.Phases {
			if res.Phases[i].Name == name {
				out = append(out, pipebench.Detection{Detector: DetectGeneratorLimit, Phase: name, Began: res.Phases[i].Started, Message: "pipebench's own limit: " + msg})
				break
			}
		}
	}
	return out
}

// takenRate is the rate at which the system under test took items in
// phase p from began: the mean of the sent_rate series over it where
// there are points, else the phase's sent rate.
func takenRate(res *pipebench.Result, p *pipebench.PhaseResult, began time.Time) float64 {
	for _, s := range res.Series {
		if s.Name != "sent_rate" || len(s.Labels) != 0 {
			continue
		}
		if pts := window(s.Points, began, p.Ended); len(pts) >= 2 {
			return rateMean(s.Points, pts)
		}
	}
	v, _ := p.Get("sent_rate")
	return v
}

// GeneratorLimited reports whether res says that pipebench's own limit,
// not the system's, kept it from the plan (a DetectGeneratorLimit
// detection), with its message.
func GeneratorLimited(res *pipebench.Result) (string, bool) {
	for _, d := range res.Detections {
		if d.Detector == DetectGeneratorLimit {
			return d.Message, true
		}
	}
	return "", false
}

// heldAfter is the seconds from a phase's start to its first item held
// back, or NaN when none was.
func heldAfter(s SendStats, started time.Time) float64 {
	if s.FirstHeld.IsZero() {
		return math.NaN()
	}
	return math.Max(0, s.FirstHeld.Sub(started).Seconds())
}
