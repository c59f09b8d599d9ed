package kpi

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pipebench/pipebench"
)

// The histograms a shard's Result carries, by KPI name.
var shardHistograms = []string{"latency", "service_time", "wait", "schedule_lag", "read_lag", "e2e_latency"}

func encodeHistograms(in PhaseInput) map[string]string {
	out := map[string]string{}
	put := func(name string, h *hdrhistogram.Histogram) {
		if h == nil || h.TotalCount() == 0 {
			return
		}
		if b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
			out[name] = string(b)
		}
	}
	put("latency", in.Sends.Latency)
	put("service_time", in.Sends.Service)
	put("wait", in.Sends.Wait)
	put("schedule_lag", in.Sends.Lag)
	put("read_lag", in.Sends.ReadLag)
	if in.Arrivals != nil {
		put("e2e_latency", in.Arrivals.E2E)
	}
	return out
}

// Merge joins the Results of the shards of one plan into the Result one
// generator would have recorded: counts added, rates over the shared phase
// windows, percentiles from the merged histograms, the pipeline's own KPIs
// from shard 1 (every shard observes the same system), each shard's series
// labelled with its shard; then thresholds, detectors (the general ones
// and those of the plan's plug-ins that reg knows: Registry.Detectors; a
// nil reg, the general ones only), validity and the verdict on the merged
// numbers. Shards of different plans, a slice given
// twice, a missing slice, shards of different runs, a shard still running
// (a checkpoint), counts that are negative or do not add up, or a Result
// that is no shard are refused, naming them.
func Merge(shards []*pipebench.Result, reg *pipebench.Registry) (*pipebench.Result, error) {
	if len(shards) == 0 {
		return nil, errors.New("no shard results to merge")
	}
	n := 0
	byIndex := map[int]*pipebench.Result{}
	for i, s := range shards {
		sh := s.Plan.Shard
		if sh == nil {
			return nil, fmt.Errorf("result %d (run %s) is not a shard: run each slice with --shard I/N", i+1, s.Manifest.RunID)
		}
		if n == 0 {
			n = sh.Count
		}
		if sh.Count != n {
			return nil, fmt.Errorf("run %s is shard %d/%d, others are of %d", s.Manifest.RunID, sh.Index+1, sh.Count, n)
		}
		if s.Plan.Digest != shards[0].Plan.Digest {
			return nil, fmt.Errorf("run %s (shard %d/%d) comes from another plan than run %s: shards merge only with the slices of one plan", s.Manifest.RunID, sh.Index+1, n, shards[0].Manifest.RunID)
		}
		if prev, dup := byIndex[sh.Index]; dup {
			return nil, fmt.Errorf("shard %d/%d is given twice (runs %s and %s)", sh.Index+1, n, prev.Manifest.RunID, s.Manifest.RunID)
		}
		if !s.Plan.StartAt.Equal(shards[0].Plan.StartAt) {
			return nil, fmt.Errorf("run %s (shard %d/%d) started at %s, run %s at %s: these are shards of different runs (the shards of one run share --start-at)",
				s.Manifest.RunID, sh.Index+1, n, s.Plan.StartAt.Format(time.RFC3339), shards[0].Manifest.RunID, shards[0].Plan.StartAt.Format(time.RFC3339))
		}
		if err := checkShard(s); err != nil {
			return nil, fmt.Errorf("run %s (shard %d/%d): %w", s.Manifest.RunID, sh.Index+1, n, err)
		}
		byIndex[sh.Index] = s
	}
	var missing []string
	for i := 0; i < n; i++ {
		if byIndex[i] == nil {
			missing = append(missing, fmt.Sprintf("%d/%d", i+1, n))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("shard %s missing: merge needs every slice of the plan", strings.Join(missing, ", "))
	}
	ordered := make([]*pipebench.Result, n)
	for i := range ordered {
		ordered[i] = byIndex[i]
	}
	first := ordered[0]
	phases := len(first.Phases)
	for _, s := range ordered[1:] {
		phases = min(phases, len(s.Phases))
	}

	plan := wholePlan(ordered)
	res := &pipebench.Result{Schema: pipebench.ResultSchema, Plan: plan, Errors: map[string][]string{}}
	var reasons []string
	aborted := false
	for _, s := range ordered {
		if s.Manifest.Status == pipebench.StatusAborted {
			aborted = true
		}
		for class, ms := range s.Errors {
			for _, m := range ms {
				if len(res.Errors[class]) < MaxMessages && !containsStr(res.Errors[class], m) {
					res.Errors[class] = append(res.Errors[class], m)
				}
			}
		}
		for _, se := range s.Series {
			// Labelled in place: a copy of every series' labels would
			// double what the merge holds.
			if se.Labels == nil {
				se.Labels = map[string]string{}
			}
			if _, ok := se.Labels["shard"]; !ok {
				se.Labels["shard"] = fmt.Sprint(s.Plan.Shard.Index + 1)
			}
			res.Series = append(res.Series, se)
		}
	}
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	var totalSends SendStats
	for i := 0; i < phases; i++ {
		parts := make([]*pipebench.PhaseResult, n)
		for j, s := range ordered {
			parts[j] = &s.Phases[i]
		}
		pr, in, err := mergePhase(parts)
		if err != nil {
			return nil, fmt.Errorf("phase %s: %w", first.Phases[i].Name, err)
		}
		res.Phases = append(res.Phases, pr)
		if i == 0 {
			totalSends = in.Sends
		} else {
			totalSends.merge(in.Sends)
		}
		if i < len(plan.Phases) && (!aborted || i < phases-1) {
			reasons = append(reasons, Validity(plan.Phases[i], &pr, in.Sends)...)
			// A generator's CPU is its own shard's: judged there.
			for j, p := range parts {
				if why := saturatedGenerator(p); why != "" {
					reasons = append(reasons, fmt.Sprintf("phase %s, shard %d: %s", pr.Name, ordered[j].Plan.Shard.Index+1, why))
				}
			}
		}
	}
	if first.Total != nil {
		parts := make([]*pipebench.PhaseResult, 0, n)
		for _, s := range ordered {
			if s.Total != nil {
				parts = append(parts, s.Total)
			}
		}
		if len(parts) == n {
			t, _, err := mergePhase(parts)
			if err != nil {
				return nil, fmt.Errorf("total: %w", err)
			}
			res.Total = &t
		}
	}
	var planned uint64
	for i := 0; i < phases && i < len(plan.Phases); i++ {
		planned += plan.Phases[i].Items
	}
	mergePending(ordered, res) // the pipeline held its pending items once, not once per shard
	reasons = append(reasons, reached(totalSends, planned)...)
	res.Thresholds = EvalThresholds(plan, res.Phases)
	var detectors []pipebench.Detector
	if reg != nil {
		detectors = reg.Detectors(plan)
	}
	res.Detections = append(Saturation(res, reasons), DetectAll(res, detectors)...)
	res.Summary = append(Summary(res), Capacity(res)...)

	m := first.Manifest
	// One id per merge, so merging again saves another run.
	m.RunID = pipebench.NewRunID(time.Now(), "merged")
	for _, s := range ordered {
		if s.Manifest.Started.Before(m.Started) {
			m.Started = s.Manifest.Started
		}
		if s.Manifest.Ended.After(m.Ended) {
			m.Ended = s.Manifest.Ended
		}
	}
	m.Labels = map[string]string{"shards": fmt.Sprint(n)}
	for k, v := range first.Manifest.Labels {
		m.Labels[k] = v
	}
	var failures []string
	if !aborted {
		failures = acceptedNothing(totalSends)
	}
	m.Status, m.Reasons = Verdict(Judgement{Thresholds: res.Thresholds, Invalid: reasons, Failures: failures, Aborted: aborted, Ran: phases, Planned: len(plan.Phases)})
	res.Manifest = m
	res.Summary = append(res.Summary, LedgerSummary(res)...)
	return res, nil
}

// wholePlan rebuilds the plan the shards were sliced from: rates
// multiplied back, items and blast counts added, one sequence range.
func wholePlan(shards []*pipebench.Result) pipebench.Plan {
	p := shards[0].Plan
	n := pipebench.Rate(len(shards))
	p.Shard, p.SeqStart = nil, 0
	p.Phases = append([]pipebench.PlanPhase(nil), p.Phases...)
	for i := range p.Phases {
		ph := &p.Phases[i]
		pr := ph.Profile
		pr.Rate, pr.From, pr.To = pr.Rate*n, pr.From*n, pr.To*n
		if pr.Steps != nil {
			pr.Steps = append([]pipebench.Step(nil), pr.Steps...)
			for j := range pr.Steps {
				pr.Steps[j].Rate *= n
			}
		}
		if pr.Burst != nil {
			b := *pr.Burst
			b.Rate *= n
			pr.Burst = &b
		}
		ph.Items, pr.Count, pr.Workers, ph.MaxInFlight = 0, 0, 0, 0
		for _, s := range shards {
			if i < len(s.Plan.Phases) {
				sp := s.Plan.Phases[i]
				ph.Items += sp.Items
				pr.Count += sp.Profile.Count
				pr.Workers += sp.Profile.Workers
				ph.MaxInFlight += sp.MaxInFlight
			}
		}
		ph.Profile = pr
	}
	return p
}

// The KPIs mergePhase adds up across shards; Build recomputes the rest of
// the generator's and the sink's from them.
var summed = []string{"sent", "accepted", "accepted_bytes", "dropped", "held_back", "missed", "abandoned", "delivered", "lost", "duplicates", "reordered", "faulted"}

// mergePhase joins one phase of every shard.
func mergePhase(parts []*pipebench.PhaseResult) (pipebench.PhaseResult, PhaseInput, error) {
	in := PhaseInput{Name: parts[0].Name, Started: parts[0].Started, Ended: parts[0].Ended}
	sum := map[string]float64{}
	has := map[string]bool{}
	for _, p := range parts {
		if p.Name != in.Name {
			return pipebench.PhaseResult{}, in, fmt.Errorf("shards disagree on the phase: %q and %q", in.Name, p.Name)
		}
		if p.Started.Before(in.Started) {
			in.Started = p.Started
		}
		if p.Ended.After(in.Ended) {
			in.Ended = p.Ended
		}
		for _, k := range p.KPIs {
			if len(k.Labels) == 0 && containsStr(summed, k.Name) || k.Name == "target_rate" {
				sum[k.Name] += k.Value
				has[k.Name] = true
			}
			if k.Name == "errors" {
				sum["errors."+k.Labels["class"]] += k.Value
			}
			if k.Name == "held_back" && k.Labels["reason"] != "" {
				sum["held_back."+k.Labels["reason"]] += k.Value
			}
		}
	}
	s := SendStats{Details: map[string]uint64{}, HeldBack: map[string]uint64{}}
	s.Items[pipebench.ClassRefused] = uint64(sum["errors.refused"])
	s.Items[pipebench.ClassTimeout] = uint64(sum["errors.timeout"])
	s.Items[pipebench.ClassError] = uint64(sum["errors.error"])
	s.Items[pipebench.ClassOK] = uint64(sum["accepted"])
	for k, v := range sum {
		if reason, ok := strings.CutPrefix(k, "held_back."); ok {
			s.HeldBack[reason] = uint64(v)
		}
	}
	s.Items[pipebench.ClassDropped] = s.HeldBack[HeldMaxInFlight] + s.HeldBack[HeldMaxInFlightBytes]
	s.DroppedForBytes = s.HeldBack[HeldMaxInFlightBytes]
	s.Missed = uint64(sum["missed"])
	if !has["held_back"] && !has["missed"] {
		// A shard written before held_back and missed existed: its
		// dropped items were max_in_flight's.
		s.Items[pipebench.ClassDropped] = uint64(sum["dropped"])
		s.HeldBack[HeldMaxInFlight] = uint64(sum["dropped"])
	}
	s.Abandoned = uint64(sum["abandoned"])
	s.AcceptedBytes = uint64(sum["accepted_bytes"])
	var hists = map[string]*hdrhistogram.Histogram{}
	for _, name := range shardHistograms {
		for _, p := range parts {
			enc, ok := p.Histograms[name]
			if !ok {
				continue
			}
			h, err := hdrhistogram.Decode([]byte(enc))
			if err != nil {
				return pipebench.PhaseResult{}, in, fmt.Errorf("histogram %s: %w", name, err)
			}
			if hists[name] == nil {
				hists[name] = newHist()
			}
			hists[name].Merge(h)
		}
	}
	s.Latency, s.Service, s.Lag = orEmpty(hists["latency"]), orEmpty(hists["service_time"]), orEmpty(hists["schedule_lag"])
	s.Wait, s.ReadLag = orEmpty(hists["wait"]), orEmpty(hists["read_lag"])
	in.Sends = s
	if has["target_rate"] {
		in.TargetRate = sum["target_rate"]
	}
	if has["delivered"] || has["lost"] {
		in.Arrivals = &ArrivalStats{
			Delivered: uint64(sum["delivered"]), Lost: uint64(sum["lost"]),
			Duplicates: uint64(sum["duplicates"]), Reordered: uint64(sum["reordered"]),
			E2E: orEmpty(hists["e2e_latency"]),
		}
		in.Faulted = uint64(sum["faulted"])
	}
	pr := Build(in, nil)
	// The first item held back in any shard.
	after := math.NaN()
	for _, p := range parts {
		if v, ok := p.Get(HeldAfter); ok && (math.IsNaN(after) || p.Started.Add(time.Duration(v*float64(time.Second))).Before(in.Started.Add(time.Duration(after*float64(time.Second))))) {
			after = p.Started.Add(time.Duration(v * float64(time.Second))).Sub(in.Started).Seconds()
		}
	}
	if !math.IsNaN(after) {
		pr.Set(pipebench.KPI{Name: HeldAfter, Value: math.Max(after, 0), Unit: pipebench.UnitSeconds})
	}
	// The rest (the pipeline's own KPIs, derived ones) from the first
	// shard that has them: every shard observed the same system.
	for _, p := range parts {
		for _, k := range p.KPIs {
			if strings.HasPrefix(k.Name, "generator_") {
				continue // each shard's own process: no one figure for all
			}
			if _, ok := pr.Get(k.Name, flatten(k.Labels)...); !ok {
				pr.Set(k)
			}
		}
	}
	encoded := encodeHistograms(in)
	if len(encoded) > 0 {
		pr.Histograms = encoded
	}
	return pr, in, nil
}

func orEmpty(h *hdrhistogram.Histogram) *hdrhistogram.Histogram {
	if h == nil {
		return newHist()
	}
	return h
}

func flatten(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k, v)
	}
	return out
}

// checkShard refuses a shard whose Result cannot be merged as a finished
// run's: a checkpoint of a run still going, a count that is negative or
// not a number, more accepted than sent, more than its plan's slice sends
// (checkCounts), more than a run of its plan records (CheckShardShape).
func checkShard(r *pipebench.Result) error {
	if r.Manifest.Status == pipebench.StatusRunning {
		return errors.New("it is a checkpoint of a run still going (status running): merge the shards once every one has ended")
	}
	rows := append([]pipebench.PhaseResult(nil), r.Phases...)
	if r.Total != nil {
		rows = append(rows, *r.Total)
	}
	for _, p := range rows {
		for _, k := range p.KPIs {
			if math.IsNaN(k.Value) || math.IsInf(k.Value, 0) || (k.Value < 0 && k.Unit == pipebench.UnitCount) {
				return fmt.Errorf("phase %s: %s is %v, which no run records: the file was changed or damaged", p.Name, k.Key(), k.Value)
			}
		}
		sent, _ := p.Get("sent")
		if acc, ok := p.Get("accepted"); ok && acc > sent {
			return fmt.Errorf("phase %s: %v items accepted of %v sent: the counts do not add up; the file was changed or damaged", p.Name, acc, sent)
		}
	}
	if err := CheckShardShape(r); err != nil {
		return err
	}
	return checkCounts(r)
}
