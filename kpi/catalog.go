package kpi

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pipebench/pipebench"
)

var (
	catalogOnce sync.Once
	catalog     map[string]bool // every KPI name Assemble computes itself
	families    map[string]bool // the families of those with a suffix (latency of latency.p99)
)

// Computed reports whether pipebench computes the KPI name itself (sent,
// latency.p99, e2e_latency.p50, pending_at_end ...), and whether its
// family (the part before the last dot) is one pipebench owns: a name of
// an owned family that is not computed (e2e_latency.p42) is one no run
// ever has. A name of another family may come from an observer (its
// series' .max, .last, .total, _rate, quantiles), which only the run
// tells. The set is not a list: it is what Assemble computes from a
// synthetic run with every kind of send, arrival, pipeline and phase (a
// paced phase, a blast, a drain, a backlog), so a KPI added to the code
// is known at once.
func Computed(name string) (computed, owned bool) {
	catalogOnce.Do(buildCatalog)
	if catalog[name] {
		return true, true
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		return false, families[name[:i]]
	}
	return false, false
}

// CheckName returns an error naming what pipebench computes when name is
// of a family pipebench owns but is not one it computes (a column for a
// KPI no run has), nil otherwise.
func CheckName(name string) error {
	computed, owned := Computed(name)
	if computed || !owned {
		return nil
	}
	i := strings.LastIndexByte(name, '.')
	var same []string
	for n := range catalog {
		if strings.HasPrefix(n, name[:i+1]) {
			same = append(same, n)
		}
	}
	sort.Strings(same)
	return fmt.Errorf("pipebench never computes %s: of %s it computes %s", name, name[:i], strings.Join(same, ", "))
}

// buildCatalog assembles two synthetic runs (a paced phase and a blast,
// with a sink that told two pipelines apart, every outcome class, every
// latency histogram, a backlog and a drain) and keeps the names of the
// KPIs of their phases, drains and totals.
func buildCatalog() {
	catalog, families = map[string]bool{}, map[string]bool{}
	t0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	sends := func() SendStats {
		s := SendStats{Details: map[string]uint64{"x": 1}, Latency: newHist(), Service: newHist(), Wait: newHist(), Lag: newHist(), ReadLag: newHist()}
		for c := range s.Items {
			s.Items[c] = 10
			s.Batches[c] = 1
		}
		s.Abandoned, s.DroppedForBytes, s.LastEnded = 1, 1, t0.Add(time.Second)
		for _, h := range []interface{ RecordValue(int64) error }{s.Latency, s.Service, s.Wait, s.Lag, s.ReadLag} {
			_ = h.RecordValue(1000)
		}
		return s
	}
	arrivals := func(lost uint64) *ArrivalStats {
		a := &ArrivalStats{Delivered: 5, Own: 5, Duplicates: 1, Reordered: 1, Lost: lost, E2E: newHist(), Last: t0.Add(1500 * time.Millisecond)}
		_ = a.E2E.RecordValue(2000)
		p := ArrivalStats{Delivered: 5, Own: 5, Lost: lost, E2E: newHist()}
		_ = p.E2E.RecordValue(2000)
		a.Pipelines = map[string]PipelineStats{"p1": {ArrivalStats: p, Faulted: 1}}
		return a
	}
	series := []pipebench.Series{
		{Name: "backlog", Kind: pipebench.KindGauge, Points: []pipebench.TimeValue{{T: t0, V: 1}, {T: t0.Add(time.Second), V: 5}, {T: t0.Add(2 * time.Second), V: 0}}},
		{Name: pipebench.LedgerHeld, Labels: map[string]string{"pipeline": "p1"}, Kind: pipebench.KindGauge, Points: []pipebench.TimeValue{{T: t0.Add(3 * time.Second), V: 1}}},
		{Name: pipebench.LedgerUnread, Kind: pipebench.KindGauge, Points: []pipebench.TimeValue{{T: t0.Add(3 * time.Second), V: 0}}},
		{Name: pipebench.LedgerDropped, Kind: pipebench.KindGauge, Points: []pipebench.TimeValue{{T: t0.Add(3 * time.Second), V: 1}}},
	}
	for _, v := range []struct {
		blast bool
		lost  uint64
	}{{false, 2}, {false, 0}, {true, 2}} {
		blast := v.blast
		ph := pipebench.PlanPhase{Name: "p", Items: 40, Duration: pipebench.Duration(time.Second)}
		ph.Profile.Rate = 40
		if blast {
			ph.Profile = pipebench.Profile{Kind: pipebench.ProfileBlast, Count: 40, Workers: 1}
		}
		rec := RunRecord{
			Plan:     pipebench.Plan{Phases: []pipebench.PlanPhase{ph}},
			Phases:   []PhaseInput{{Name: "p", Started: t0, Ended: t0.Add(time.Second), TargetRate: 40, Sends: sends(), Arrivals: arrivals(v.lost), Faulted: 1}},
			Drain:    &PhaseInput{Name: "drain", Started: t0.Add(time.Second), Ended: t0.Add(3 * time.Second), Arrivals: &ArrivalStats{Delivered: 1}},
			Arrivals: arrivals(v.lost), Faulted: 1, Series: series,
			LoadEnded: t0.Add(time.Second), ObservedUntil: t0.Add(3 * time.Second),
		}
		res := Assemble(rec, pipebench.Manifest{Item: "item"})
		rows := append([]pipebench.PhaseResult{}, res.Phases...)
		for _, p := range []*pipebench.PhaseResult{res.Drain, res.Total} {
			if p != nil {
				rows = append(rows, *p)
			}
		}
		for _, p := range rows {
			for _, k := range p.KPIs {
				catalog[k.Name] = true
			}
		}
	}
	for n := range catalog {
		if i := strings.LastIndexByte(n, '.'); i > 0 && !slices.Contains([]string{"", "backlog"}, n[:i]) {
			families[n[:i]] = true
		}
	}
}
