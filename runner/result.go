package runner

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/kpi"
)

// ItemNamer is the optional ability of a Generator to say what one item is
// ("span", "metric point"), for column headers.
type ItemNamer interface {
	ItemName() string
}

// result assembles the Result from everything recorded.
func (r *run) result(started time.Time, aborted bool) *pipebench.Result {
	res := &pipebench.Result{Schema: pipebench.ResultSchema, Plan: r.plan}
	host, _ := os.Hostname()
	m := pipebench.Manifest{
		RunID:       newRunID(started),
		Tool:        "pipebench",
		ToolVersion: r.p.ToolVersion,
		Scenario:    r.sc.Name,
		File:        r.sc.File,
		Version:     r.sc.Version,
		Case:        r.sc.Case,
		Labels:      r.sc.Labels,
		Target:      r.sc.Target.Type,
		Item:        "event",
		Started:     started.UTC(),
		Ended:       time.Now().UTC(),
		Host:        host,
		GoVersion:   runtime.Version(),
		Args:        r.p.Args,
	}
	if m.Case == "" {
		m.Case = m.Scenario
	}
	if r.c.drv != nil && r.c.sut != nil {
		m.Target += " -> " + r.c.sut.Endpoint()
	}
	if n, ok := r.c.gen.(ItemNamer); ok {
		m.Item = n.ItemName()
	}
	r.seriesMu.Lock()
	res.Series = r.series.list()
	r.seriesMu.Unlock()

	// Phases that ran, with their KPIs.
	var reasons []string
	totalSends := kpi.SendStats{Details: map[string]uint64{}, Latency: newHist(), Service: newHist(), Lag: newHist()}
	ran := 0
	for i, ph := range r.plan.Phases {
		if r.phaseT0[i].IsZero() {
			break
		}
		ran++
		end := r.phaseEnd[i]
		if end.IsZero() {
			end = time.Now()
		}
		in := kpi.PhaseInput{
			Name: ph.Name, Started: r.phaseT0[i].UTC(), Ended: end.UTC(),
			TargetRate: plannedRate(ph),
			Sends:      r.rec.Stats(i),
		}
		if r.c.sink != nil {
			hi := r.nextSeq
			if i+1 < len(r.plan.Phases) && !r.phaseT0[i+1].IsZero() {
				hi = r.phaseFirstSeq(i + 1)
			}
			a := r.arr.Stats(i, hi)
			in.Arrivals = &a
			in.Faulted = r.faultedAt[i]
			if i > 0 {
				in.Faulted -= r.faultedAt[i-1]
			}
		}
		pr := kpi.Build(in, res.Series)
		res.Phases = append(res.Phases, pr)
		mergeSends(&totalSends, in.Sends)
		if !aborted || i < ran-1 {
			reasons = append(reasons, validity(ph, &pr, in.Sends)...)
		}
	}
	if ran > 0 {
		first, last := res.Phases[0], res.Phases[len(res.Phases)-1]
		in := kpi.PhaseInput{Name: "total", Started: first.Started, Ended: last.Ended, Sends: totalSends}
		var planned float64
		paced := true // a closed-model (blast) phase has no target rate
		for i, ph := range r.plan.Phases[:ran] {
			// What the phase planned for as long as it ran: a phase cut
			// short by a signal planned only its share (a ramp's average).
			planned += plannedRate(ph) * res.Phases[i].Ended.Sub(res.Phases[i].Started).Seconds()
			paced = paced && ph.Profile.Kind != pipebench.ProfileBlast
		}
		if secs := last.Ended.Sub(first.Started).Seconds(); secs > 0 && paced {
			in.TargetRate = planned / secs
		}
		if r.c.sink != nil {
			a := r.arr.Stats(0, r.nextSeq)
			// Stats(0, ...) gives the whole seq range's loss, but only
			// phase 0's counts: add the others, and the drain's arrivals.
			a.Delivered += r.arr.DeliveredDuring(len(r.plan.Phases))
			for i := 1; i < ran; i++ {
				s := r.arr.Stats(i, r.nextSeq)
				a.Delivered += s.Delivered
				a.Duplicates += s.Duplicates
				a.Reordered += s.Reordered
				a.E2E.Merge(s.E2E)
				if s.Last.After(a.Last) {
					a.Last = s.Last
				}
			}
			in.Arrivals = &a
			in.Faulted, _ = r.arr.Totals()
			total := kpi.Build(in, res.Series)
			// The pipeline's own totals include what it exported during
			// the drain.
			for _, k := range kpi.ObservedKPIs(res.Series, first.Started, time.Now()) {
				if strings.HasSuffix(k.Name, ".total") {
					total.Set(k)
				}
			}
			if !a.Last.IsZero() && a.Last.After(last.Ended) {
				total.Set(pipebench.KPI{Name: "drain_time", Value: a.Last.Sub(last.Ended).Seconds(), Unit: pipebench.UnitSeconds})
			} else {
				total.Set(pipebench.KPI{Name: "drain_time", Value: 0, Unit: pipebench.UnitSeconds})
			}
			if b := maxSeries(res.Series, "backlog"); b >= 0 {
				total.Set(pipebench.KPI{Name: "backlog.max", Value: b, Unit: pipebench.UnitCount})
			}
			res.Total = &total
		} else {
			total := kpi.Build(in, res.Series)
			res.Total = &total
		}
	}

	res.Thresholds = r.evalThresholds(res)
	res.Detections = kpi.Detect(res, kpi.DetectOptions{})
	switch {
	case aborted:
		m.Status = pipebench.StatusAborted
		reasons = append([]string{fmt.Sprintf("stopped by a signal after %d of %d phases; the result is partial", ran, len(r.plan.Phases))}, reasons...)
	case len(reasons) > 0:
		m.Status = pipebench.StatusInvalid
	case failed(res.Thresholds):
		m.Status = pipebench.StatusFailed
		for _, t := range res.Thresholds {
			if !t.Passed {
				reasons = append(reasons, fmt.Sprintf("threshold %q failed in phase %s: %s", t.Expr, t.Phase, t.Message))
			}
		}
	default:
		m.Status = pipebench.StatusPassed
	}
	if n := r.obsErrors.Load(); n > 0 {
		reasons = append(reasons, fmt.Sprintf("%d observations failed (see the log)", n))
	}
	m.Reasons = reasons
	res.Manifest = m
	return res
}

func (r *run) phaseFirstSeq(i int) uint64 { return r.arr.PhaseStart(i) }

func failed(ts []pipebench.ThresholdResult) bool {
	for _, t := range ts {
		if !t.Passed {
			return true
		}
	}
	return false
}

// evalThresholds evaluates the scenario's thresholds on the phases they
// name (every phase when none).
func (r *run) evalThresholds(res *pipebench.Result) []pipebench.ThresholdResult {
	var out []pipebench.ThresholdResult
	for _, t := range r.sc.Thresholds {
		th, err := kpi.ParseThreshold(t.Expr)
		if err != nil {
			out = append(out, pipebench.ThresholdResult{Expr: t.Expr, Phase: t.Phase, Message: err.Error()})
			continue
		}
		for i := range res.Phases {
			if t.Phase != "" && res.Phases[i].Name != t.Phase {
				continue
			}
			out = append(out, th.Eval(&res.Phases[i])...)
		}
	}
	return out
}

// validity returns why a phase's numbers describe pipebench rather than the
// system under test, or nothing when they are sound.
func validity(ph pipebench.PlanPhase, pr *pipebench.PhaseResult, s kpi.SendStats) []string {
	var reasons []string
	if ph.Profile.Kind == pipebench.ProfileBlast {
		return nil
	}
	var started uint64
	for c := pipebench.ClassOK; c < pipebench.ClassDropped; c++ {
		started += s.Items[c]
	}
	dropped := s.Items[pipebench.ClassDropped]
	planned := float64(ph.Items)
	if planned > 0 && float64(started) < 0.99*planned {
		why := fmt.Sprintf("phase %s: the generator started %d of %d planned items (%.1f%%)", ph.Name, started, ph.Items, 100*float64(started)/planned)
		if dropped > 0 {
			why += fmt.Sprintf("; %d were dropped because max_in_flight (%d) sends were still waiting for answers: raise max_in_flight or lower the rate", dropped, ph.MaxInFlight)
		} else {
			why += ": pipebench could not keep up; lower the rate, add generator CPU, or scale out"
		}
		reasons = append(reasons, why)
	}
	if lag, ok := pr.Get("schedule_lag.p99"); ok && lag > 1000 {
		reasons = append(reasons, fmt.Sprintf("phase %s: sends started %.0f ms late at p99: the generator fell behind its schedule", ph.Name, lag))
	}
	return reasons
}

// plannedRate is the phase's mean target rate in items per second.
func plannedRate(ph pipebench.PlanPhase) float64 {
	if d := ph.Duration.D().Seconds(); d > 0 && ph.Profile.Kind != pipebench.ProfileBlast {
		return float64(ph.Items) / d
	}
	return 0
}

func mergeSends(dst *kpi.SendStats, src kpi.SendStats) {
	for c := range dst.Items {
		dst.Items[c] += src.Items[c]
		dst.Batches[c] += src.Batches[c]
	}
	dst.Bytes += src.Bytes
	for k, v := range src.Details {
		dst.Details[k] += v
	}
	dst.Latency.Merge(src.Latency)
	dst.Service.Merge(src.Service)
	dst.Lag.Merge(src.Lag)
}

func maxSeries(ss []pipebench.Series, name string) float64 {
	m := -1.0
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		for _, p := range s.Points {
			if p.V > m {
				m = p.V
			}
		}
	}
	return m
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// newRunID returns a sortable, unique run id: UTC time and 4 random bytes.
func newRunID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
