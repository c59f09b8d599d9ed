package kpi

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// The ledger balances in items, for the run, each phase, each pipeline
// the sink tells apart and each shard of a merge:
//
//	sent      = not accepted (errors by class) + abandoned (no answer) + accepted
//	accepted  = delivered (accepted items that arrived) + missing
//	missing   = unread_at_source + pending_at_end + lost
//
// missing is the sink's count (accepted, not arrived when the drain
// ended). unread_at_source and pending_at_end are read from the
// pipeline's own state after the drain (ledger_unread and ledger_held,
// in items); a term that cannot be read is unknown, and so is lost: the
// missing items it leaves open are unaccounted, with why. lost is what is
// missing and the pipeline no longer holds; where the pipeline counts
// what it dropped (ledger_dropped), lost_confirmed says how many.
// Duplicates are shown apart. The terms are attributed to the latest
// items: unread first (not read yet), then pending (read, not passed on),
// from the last phase back, so the phases add up to the run.

// The KPIs of the ledger.
const (
	kpiMissing   = "missing"          // accepted, not arrived when the drain ended
	kpiUnread    = "unread_at_source" // of missing: written at the source, not read by the pipeline
	kpiPending   = "pending_at_end"   // of missing: held by the pipeline
	kpiLost      = "lost"             // of missing: no longer held
	kpiUnacc     = "unaccounted"      // of missing: a term could not be read
	kpiHeld      = "held_at_end"      // what the pipeline said it held (it may hold what was not accepted, or already arrived)
	kpiUnreadRaw = "unread_at_end"    // what the source said was not read yet
	kpiDropped   = "lost_confirmed"   // what the pipeline's own counters say it dropped
	kpiUnknown   = "ledger_unknown"   // labels term (pending_at_end, unread_at_source) and because
)

// LedgerKPIs are the ledger's KPI names, for reports that show it.
var LedgerKPIs = []string{kpiMissing, kpiUnread, kpiPending, kpiLost, kpiUnacc, kpiHeld, kpiUnreadRaw, kpiDropped, kpiUnknown}

// ledgerReading is what the pipeline's own state said after the drain.
type ledgerReading struct {
	held, unread, dropped float64 // in items
	// heldBy splits held by pipeline (the label pipeline), whereBy its
	// holders.
	heldBy  map[string]float64
	whereBy map[string][]string
	// readHeld, readUnread and readDropped say a reading exists.
	readHeld, readUnread, readDropped bool
	// where says, per term, what held the items ("collector-0 exporter
	// otlp/p2 1,200").
	where map[string][]string
	// unknown holds, per term (held, unread), why it cannot be read.
	unknown map[string][]string
}

func (r *ledgerReading) why(term, format string, args ...any) {
	if r.unknown == nil {
		r.unknown = map[string][]string{}
	}
	s := fmt.Sprintf(format, args...)
	if !slices.Contains(r.unknown[term], s) {
		r.unknown[term] = append(r.unknown[term], s)
	}
}

// endSlack is how far before the last observation a point still counts as
// read at it (points carry the time the observation was asked for).
const endSlack = 10 * time.Millisecond

// readLedger reads the ledger series at until (the last observation,
// after the drain): each series' point then. A series read earlier but not
// then makes its term unknown (what held the items was not read at the
// end); in a checkpoint (partial) each series' latest point stands. A
// series counting in another unit than the run's items (counts) gives 0
// items when it held nothing, and leaves its term unknown otherwise. item
// is the run's item in singular ("span"; "" for items).
func readLedger(series []pipebench.Series, until time.Time, item string, partial bool) ledgerReading {
	r := ledgerReading{heldBy: map[string]float64{}, where: map[string][]string{}, whereBy: map[string][]string{}}
	// A holder that said at the end that it cannot be read says why
	// itself: its earlier readings are not "not read".
	said := map[string]bool{}
	for _, s := range series {
		if s.Name == pipebench.LedgerUnknown && s.Labels["where"] != "" && len(s.Points) > 0 {
			if p := s.Points[len(s.Points)-1]; partial || !p.T.Before(until.Add(-endSlack)) && !p.T.After(until) {
				said[s.Labels["where"]] = true
			}
		}
	}
	for _, s := range series {
		term := ""
		switch s.Name {
		case pipebench.LedgerHeld:
			term = "held"
		case pipebench.LedgerUnread:
			term = "unread"
		case pipebench.LedgerDropped:
			term = "dropped"
		case pipebench.LedgerUnknown:
			term = "unknown"
		default:
			continue
		}
		var p pipebench.TimeValue
		found := false
		for i := len(s.Points) - 1; i >= 0; i-- {
			if !s.Points[i].T.After(until) {
				p, found = s.Points[i], true
				break
			}
		}
		if !found {
			continue
		}
		where := s.Labels["where"]
		if where == "" {
			where = s.Name
		}
		atEnd := partial || !p.T.Before(until.Add(-endSlack))
		if term == "unknown" {
			if atEnd && p.V > 0 {
				t := s.Labels["term"]
				if t != "unread" {
					t = "held"
				}
				r.why(t, "%s", s.Labels["because"])
			}
			continue
		}
		if !atEnd {
			if term != "dropped" && !said[where] {
				r.why(term, "%s was not read after the drain (its last reading was %s before the end)", where, until.Sub(p.T).Round(time.Millisecond))
			}
			continue
		}
		if c := s.Labels["counts"]; c != "" && !sameUnit(c, item) {
			if term == "dropped" || p.V == 0 {
				if term != "dropped" {
					r.mark(term)
				}
				continue
			}
			r.why(term, "%s holds %s %s, and the run counts %s", where, pipebench.FormatCount(p.V), c, plural(item))
			continue
		}
		switch term {
		case "held":
			r.held += p.V
			r.readHeld = true
			if pl := s.Labels["pipeline"]; pl != "" {
				r.heldBy[pl] += p.V
				if p.V > 0 {
					r.whereBy[pl] = append(r.whereBy[pl], where+" "+pipebench.FormatCount(p.V))
				}
			}
			if p.V > 0 {
				r.where["held"] = append(r.where["held"], where+" "+pipebench.FormatCount(p.V))
			}
		case "unread":
			r.unread += p.V
			r.readUnread = true
			if p.V > 0 {
				r.where["unread"] = append(r.where["unread"], where+" "+pipebench.FormatCount(p.V))
			}
		case "dropped":
			r.dropped += p.V
			r.readDropped = true
		}
	}
	for _, ws := range r.where {
		sort.Strings(ws)
	}
	for _, ws := range r.whereBy {
		sort.Strings(ws)
	}
	return r
}

// holders writes where items are held: "collector-0 exporter otlp/p1" for
// one holder, each with its count for several.
func holders(ws []string) string {
	if len(ws) == 1 {
		if i := strings.LastIndexByte(ws[0], ' '); i > 0 {
			return ws[0][:i]
		}
	}
	return strings.Join(ws, ", ")
}

// mark records that a term was read (as 0 items).
func (r *ledgerReading) mark(term string) {
	switch term {
	case "held":
		r.readHeld = true
	case "unread":
		r.readUnread = true
	}
}

// sameUnit tells whether a pipeline's unit ("spans", "log records",
// "log_records") is the run's item ("span", "log record").
func sameUnit(counts, item string) bool {
	c := strings.ReplaceAll(counts, "_", " ")
	return item == "" || c == "items" || c == item || c == plural(item)
}

func plural(item string) string {
	if item == "" {
		return "items"
	}
	return item + "s"
}

// applyPending balances a run's ledger once its total's and phases' lost
// (the sink's missing items) are known: it keeps that count as missing,
// reads the pipeline's state at until (readLedger) and splits missing
// into unread_at_source, pending_at_end and lost, or unaccounted where a
// term is unknown, in the total, the phases (from the last back) and each
// pipeline the sink told apart. Without a sink (no lost) it does nothing.
func applyPending(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, series []pipebench.Series, until time.Time, item string, partial bool) {
	applyLedger(total, phases, readLedger(series, until, item, partial))
}

// applyLedger is applyPending with the reading made.
func applyLedger(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, r ledgerReading) {
	missing, ok := total.Get(kpiLost)
	if !ok {
		return
	}
	setMissing(total)
	for i := range phases {
		setMissing(&phases[i])
	}
	// The raw readings, which a merge takes from shard 1.
	if r.readHeld {
		total.Set(pipebench.KPI{Name: kpiHeld, Value: r.held, Unit: pipebench.UnitCount})
		for p, v := range r.heldBy {
			total.Set(pipebench.KPI{Name: "pipeline_" + kpiHeld, Labels: map[string]string{"pipeline": p}, Value: v, Unit: pipebench.UnitCount})
		}
	}
	if r.readUnread {
		total.Set(pipebench.KPI{Name: kpiUnreadRaw, Value: r.unread, Unit: pipebench.UnitCount})
	}
	if r.readDropped {
		total.Set(pipebench.KPI{Name: kpiDropped, Value: r.dropped, Unit: pipebench.UnitCount})
	}
	for _, term := range []string{"held", "unread"} {
		if len(r.unknown[term]) > 0 {
			total.Set(pipebench.KPI{Name: kpiUnknown, Labels: map[string]string{"term": termKPI(term), "because": strings.Join(r.unknown[term], "; ")}, Value: 1})
		}
	}
	if w := r.where["held"]; len(w) > 0 {
		total.Set(pipebench.KPI{Name: kpiHeld + "_where", Labels: map[string]string{"where": holders(w)}, Value: r.held})
	}
	for p, w := range r.whereBy {
		total.Set(pipebench.KPI{Name: "pipeline_" + kpiHeld + "_where", Labels: map[string]string{"pipeline": p, "where": holders(w)}, Value: r.heldBy[p]})
	}
	if w := r.where["unread"]; len(w) > 0 {
		total.Set(pipebench.KPI{Name: kpiUnreadRaw + "_where", Labels: map[string]string{"where": holders(w)}, Value: r.unread})
	}

	pipes := total.All("pipeline_" + kpiLost)
	if len(pipes) == 0 {
		splitMissing(total, phases, nil, missing, r.unread, r.held, r)
		return
	}
	// Each pipeline: the source's unread items are missing from every
	// pipeline; what each holds is its own. The total's terms are the
	// pipelines' added (copies).
	var sums [4]float64
	knownU, knownH := true, true
	for _, k := range pipes {
		p := k.Labels["pipeline"]
		lbl := map[string]string{"pipeline": p}
		held, ok := r.heldBy[p]
		rp := r
		if !ok && r.held > 0 {
			// The pipeline's share of what is held is not known.
			rp.unknown = maps.Clone(r.unknown)
			rp.why("held", "what the pipeline holds is not told apart by pipeline")
		}
		terms, ku, kh := splitMissing(total, phases, lbl, k.Value, r.unread, held, rp)
		for i := range sums {
			sums[i] += terms[i]
		}
		knownU, knownH = knownU && ku, knownH && kh
	}
	// The total's own terms: the pipelines' copies added (the phases'
	// unlabelled lost is their pipelines' added too).
	var copies float64
	for _, k := range pipes {
		copies += k.Value
	}
	splitMissing(total, phases, nil, copies, sums[0], sums[1], knownOf(r, knownU, knownH))
}

// knownOf returns r with a term made unknown (without a reason of its own:
// a pipeline's gave it) when the pipelines' did not all know it.
func knownOf(r ledgerReading, u, h bool) ledgerReading {
	r.unknown = maps.Clone(r.unknown)
	if !u && !anyUnknown(r, "unread") {
		r.why("unread", "a pipeline's unread items are not known")
	}
	if !h && !anyUnknown(r, "held") {
		r.why("held", "what a pipeline holds is not known")
	}
	r.readHeld = true // the pipelines' terms stand for the reading
	return r
}

func anyUnknown(r ledgerReading, term string) bool { return len(r.unknown[term]) > 0 }

func termKPI(term string) string {
	if term == "unread" {
		return kpiUnread
	}
	return kpiPending
}

// setMissing keeps a row's lost, as the sink counted it, as missing.
func setMissing(p *pipebench.PhaseResult) {
	for _, k := range p.KPIs {
		if k.Name == kpiLost {
			p.Set(pipebench.KPI{Name: kpiMissing, Labels: k.Labels, Value: k.Value, Unit: pipebench.UnitCount})
		}
	}
	for _, k := range p.All("pipeline_" + kpiLost) {
		p.Set(pipebench.KPI{Name: "pipeline_" + kpiMissing, Labels: k.Labels, Value: k.Value, Unit: pipebench.UnitCount})
	}
}

// splitMissing divides missing items (the total's, or one pipeline's when lbl is
// set) into unread (at most what the source has unread), pending (at most
// what the pipeline holds) and lost, or unaccounted when a term is
// unknown, in the total and the phases from the last back. It returns the
// total's unread, pending, lost and unaccounted.
func splitMissing(total *pipebench.PhaseResult, phases []pipebench.PhaseResult, lbl map[string]string, missing, unread, held float64, r ledgerReading) (terms [4]float64, unreadKnown, heldKnown bool) {
	name := func(n string) string {
		if lbl != nil {
			return "pipeline_" + n
		}
		return n
	}
	unreadKnown, heldKnown = !anyUnknown(r, "unread"), !anyUnknown(r, "held")
	// Nothing missing: every term is 0, whatever could be read.
	if missing == 0 {
		unreadKnown, heldKnown = true, true
	}
	if !r.readHeld && missing > 0 && heldKnown {
		heldKnown = false
		r.why("held", "nothing read what the pipeline holds (an observer of its kind: prometheus preset otelcol, nats, kafka; or an embedded system under test that reports it)")
		total.Set(pipebench.KPI{Name: kpiUnknown, Labels: map[string]string{"term": kpiPending, "because": strings.Join(r.unknown["held"], "; ")}, Value: 1})
	}
	u, h := 0.0, 0.0
	if unreadKnown {
		u = math.Min(math.Max(unread, 0), missing)
	}
	if heldKnown {
		h = math.Min(math.Max(held, 0), missing-u)
	}
	rest := missing - u - h
	shares := func(p *pipebench.PhaseResult) float64 {
		for _, k := range p.All(name(kpiMissing)) {
			if maps.Equal(k.Labels, lbl) {
				return k.Value
			}
		}
		return 0
	}
	// Phases, from the last back: unread first, then pending.
	leftU, leftH := u, h
	for i := len(phases) - 1; i >= 0; i-- {
		m := shares(&phases[i])
		if _, ok := phases[i].Get(name(kpiLost), flatten(lbl)...); !ok && m == 0 {
			continue
		}
		pu := math.Min(m, leftU)
		leftU -= pu
		ph := math.Min(m-pu, leftH)
		leftH -= ph
		setTerms(&phases[i], lbl, name, pu, ph, m-pu-ph, unreadKnown, heldKnown)
	}
	setTerms(total, lbl, name, u, h, rest, unreadKnown, heldKnown)
	if unreadKnown && heldKnown {
		return [4]float64{u, h, rest, 0}, true, true
	}
	return [4]float64{u, h, 0, rest}, unreadKnown, heldKnown
}

// setTerms sets one row's unread, pending and lost (or unaccounted).
func setTerms(p *pipebench.PhaseResult, lbl map[string]string, name func(string) string, u, h, rest float64, unreadKnown, heldKnown bool) {
	setTerm(p, lbl, name(kpiUnread), u, unreadKnown)
	setTerm(p, lbl, name(kpiPending), h, heldKnown)
	if unreadKnown && heldKnown {
		p.Set(pipebench.KPI{Name: name(kpiLost), Labels: lbl, Value: rest, Unit: pipebench.UnitCount})
		drop(p, name(kpiUnacc), lbl)
		return
	}
	drop(p, name(kpiLost), lbl)
	p.Set(pipebench.KPI{Name: name(kpiUnacc), Labels: lbl, Value: rest, Unit: pipebench.UnitCount})
}

// setTerm sets a term when it is known and drops it when it is not.
func setTerm(p *pipebench.PhaseResult, lbl map[string]string, name string, v float64, known bool) {
	if !known {
		drop(p, name, lbl)
		return
	}
	p.Set(pipebench.KPI{Name: name, Labels: lbl, Value: v, Unit: pipebench.UnitCount})
}

func drop(p *pipebench.PhaseResult, name string, lbl map[string]string) {
	p.KPIs = slices.DeleteFunc(p.KPIs, func(k pipebench.KPI) bool { return k.Name == name && maps.Equal(k.Labels, lbl) })
}

// readingOf rebuilds the reading a Result's total kept (its raw
// readings: held_at_end, unread_at_end, lost_confirmed, ledger_unknown),
// for a merge, which takes the pipeline's state from shard 1.
func readingOf(t *pipebench.PhaseResult) ledgerReading {
	r := ledgerReading{heldBy: map[string]float64{}, where: map[string][]string{}}
	if v, ok := t.Get(kpiHeld); ok {
		r.held, r.readHeld = v, true
	}
	for _, k := range t.All("pipeline_" + kpiHeld) {
		r.heldBy[k.Labels["pipeline"]] = k.Value
	}
	if v, ok := t.Get(kpiUnreadRaw); ok {
		r.unread, r.readUnread = v, true
	}
	if v, ok := t.Get(kpiDropped); ok {
		r.dropped, r.readDropped = v, true
	}
	for _, k := range t.All(kpiUnknown) {
		term := "held"
		if k.Labels["term"] == kpiUnread {
			term = "unread"
		}
		for _, why := range strings.Split(k.Labels["because"], "; ") {
			if !strings.HasPrefix(why, "nothing read what the pipeline holds") {
				r.why(term, "%s", why)
			}
		}
	}
	r.whereBy = map[string][]string{}
	for _, k := range t.All(kpiHeld + "_where") {
		r.where["held"] = append(r.where["held"], k.Labels["where"]+" "+pipebench.FormatCount(k.Value))
	}
	for _, k := range t.All("pipeline_" + kpiHeld + "_where") {
		r.whereBy[k.Labels["pipeline"]] = append(r.whereBy[k.Labels["pipeline"]], k.Labels["where"]+" "+pipebench.FormatCount(k.Value))
	}
	for _, k := range t.All(kpiUnreadRaw + "_where") {
		r.where["unread"] = append(r.where["unread"], k.Labels["where"])
	}
	return r
}

// mergePending balances a merged Result's ledger: each shard split its
// own missing items by the pipeline's state, but the pipeline is one, so
// the merged rows' missing items (every shard's added) are split again by
// shard 1's reading, once.
func mergePending(shards []*pipebench.Result, merged *pipebench.Result) {
	if merged.Total == nil || len(shards) == 0 || shards[0].Total == nil {
		return
	}
	if _, ok := shards[0].Total.Get(kpiMissing); !ok {
		return
	}
	r := readingOf(shards[0].Total)
	ledgerNames := []string{kpiMissing, kpiUnread, kpiPending, kpiLost, kpiUnacc}
	// resum sets a merged row's missing (and each pipeline's) to its
	// shards' sum, as lost, for applyLedger to split again.
	resum := func(p *pipebench.PhaseResult, parts []*pipebench.PhaseResult) {
		sums := map[string]float64{}
		labels := map[string]map[string]string{}
		for _, s := range parts {
			for _, k := range s.KPIs {
				if k.Name == kpiMissing || k.Name == "pipeline_"+kpiMissing {
					key := k.Key()
					sums[key] += k.Value
					labels[key] = k.Labels
				}
			}
		}
		p.KPIs = slices.DeleteFunc(p.KPIs, func(k pipebench.KPI) bool {
			n := strings.TrimPrefix(k.Name, "pipeline_")
			return slices.Contains(ledgerNames, n) || slices.Contains([]string{kpiHeld, kpiUnreadRaw, kpiDropped, kpiUnknown, kpiHeld + "_where", kpiUnreadRaw + "_where"}, n)
		})
		for key, v := range sums {
			name := kpiLost
			if strings.HasPrefix(key, "pipeline_") {
				name = "pipeline_" + kpiLost
			}
			p.Set(pipebench.KPI{Name: name, Labels: labels[key], Value: v, Unit: pipebench.UnitCount})
		}
	}
	for i := range merged.Phases {
		parts := make([]*pipebench.PhaseResult, 0, len(shards))
		for _, s := range shards {
			if i < len(s.Phases) {
				parts = append(parts, &s.Phases[i])
			}
		}
		resum(&merged.Phases[i], parts)
	}
	totals := make([]*pipebench.PhaseResult, 0, len(shards))
	for _, s := range shards {
		if s.Total != nil {
			totals = append(totals, s.Total)
		}
	}
	resum(merged.Total, totals)
	applyLedger(merged.Total, merged.Phases, r)
}

// LedgerSummary states the run's ledger in words, in the run's items
// (item, singular; "" for items): what was sent, not accepted, delivered,
// unread at the source, pending at the end (and where), lost (and what
// the pipeline itself counted dropped), unaccounted for (and why); each
// pipeline's apart when the sink told several apart. Nothing without a
// sink.
func LedgerSummary(r *pipebench.Result) []string {
	t := r.Total
	if t == nil {
		return nil
	}
	missing, ok := t.Get(kpiMissing)
	if !ok {
		return nil
	}
	items := plural(r.Manifest.Item)
	sent, _ := t.Get("sent")
	accepted, _ := t.Get("accepted")
	abandoned, _ := t.Get("abandoned")
	head := fmt.Sprintf("Ledger (%s): %s sent = %s not accepted + ", items, pipebench.FormatCount(sent), pipebench.FormatCount(math.Max(0, sent-accepted-abandoned)))
	if abandoned > 0 {
		head += pipebench.FormatCount(abandoned) + " with no answer + "
	}
	pipes := t.All("pipeline_" + kpiMissing)
	if len(pipes) == 0 {
		line := head + terms(t, nil, accepted-missing, r.Manifest.Item)
		if _, ok := t.Get("effected"); ok {
			line = strings.Replace(line, " delivered", " took effect", 1)
		}
		if d, _ := t.Get("duplicates"); d > 0 {
			line += fmt.Sprintf("; and %s duplicates delivered", pipebench.FormatCount(d))
		}
		return []string{line}
	}
	out := []string{head + pipebench.FormatCount(accepted) + " accepted, each through " + fmt.Sprint(len(pipes)) + " pipelines:"}
	sort.Slice(pipes, func(i, j int) bool { return pipes[i].Labels["pipeline"] < pipes[j].Labels["pipeline"] })
	for _, k := range pipes {
		line := "  " + k.Labels["pipeline"] + ": " + pipebench.FormatCount(accepted) + " = " + terms(t, k.Labels, accepted-k.Value, r.Manifest.Item)
		if d, _ := t.Get("pipeline_duplicates", "pipeline", k.Labels["pipeline"]); d > 0 {
			line += fmt.Sprintf("; and %s duplicates delivered", pipebench.FormatCount(d))
		}
		out = append(out, line)
	}
	return out
}

// terms writes a row's (or a pipeline's) missing items split: delivered
// + unread + pending + lost, or unaccounted with why.
func terms(t *pipebench.PhaseResult, lbl map[string]string, delivered float64, item string) string {
	get := func(name string) (float64, bool) {
		if lbl != nil {
			return t.Get("pipeline_"+name, flatten(lbl)...)
		}
		return t.Get(name)
	}
	parts := []string{pipebench.FormatCount(delivered) + " delivered"}
	if v, ok := get(kpiUnread); ok {
		s := pipebench.FormatCount(v) + " unread at the source"
		if w := t.All(kpiUnreadRaw + "_where"); v > 0 && len(w) > 0 {
			s += " (" + w[0].Labels["where"] + ")"
		}
		parts = append(parts, s)
	}
	if v, ok := get(kpiPending); ok {
		s := pipebench.FormatCount(v) + " pending at end"
		w := t.All(kpiHeld + "_where")
		if lbl != nil {
			w = nil
			for _, k := range t.All("pipeline_" + kpiHeld + "_where") {
				if k.Labels["pipeline"] == lbl["pipeline"] {
					w = append(w, k)
				}
			}
		}
		if v > 0 && len(w) > 0 {
			s += " (held: " + w[0].Labels["where"] + ")"
		}
		parts = append(parts, s)
	}
	if v, ok := get(kpiLost); ok {
		s := pipebench.FormatCount(v) + " lost"
		if c, ok := t.Get(kpiDropped); ok && lbl == nil {
			s += fmt.Sprintf(" (the pipeline counted %s dropped)", pipebench.FormatCount(c))
		}
		parts = append(parts, s)
	}
	if v, ok := get(kpiUnacc); ok {
		var why []string
		for _, k := range t.All(kpiUnknown) {
			why = append(why, strings.ReplaceAll(k.Labels["term"], "_", " ")+" unknown, because "+k.Labels["because"])
		}
		parts = append(parts, pipebench.FormatCount(v)+" unaccounted for ("+strings.Join(why, "; ")+")")
	}
	return strings.Join(parts, " + ")
}

// WorkLeft is what a run ended with still to do, by its ledger:
// pipebench.WorkLeft.
func WorkLeft(r *pipebench.Result) (items float64, where string) { return pipebench.WorkLeft(r) }

// effectLedger balances the ledger of a run without a sink whose effects
// an effect observer counted (the unlabelled "effects" counter: events
// that took effect): what was accepted and had not taken effect when the
// drain ended is missing, split as a sink's missing items are (what the
// system still holds is pending, the rest lost). effected is how many took
// effect during the run.
func effectLedger(t *pipebench.PhaseResult, series []pipebench.Series, from, until time.Time, item string, partial bool) {
	// The system's own count of what took effect, read with what it
	// holds, is preferred to an observer's, read at another moment.
	var effects *pipebench.Series
	for i := range series {
		if series[i].Name == pipebench.LedgerEffected && effects == nil {
			effects = &series[i]
		}
	}
	for i := range series {
		if series[i].Name == "effects" && len(series[i].Labels) == 0 && effects == nil {
			effects = &series[i]
		}
	}
	if effects == nil || len(effects.Points) == 0 {
		return
	}
	base, end, ok := effects.Points[0].V, 0.0, false
	for _, p := range effects.Points {
		if !p.T.After(from) {
			base = p.V
		}
		if !p.T.After(until) {
			end, ok = p.V, true
		}
	}
	accepted, has := t.Get("accepted")
	if !ok || !has {
		return
	}
	effected := math.Max(0, end-base)
	t.Set(pipebench.KPI{Name: "effected", Value: effected, Unit: pipebench.UnitCount})
	t.Set(pipebench.KPI{Name: kpiLost, Value: math.Max(0, accepted-effected), Unit: pipebench.UnitCount})
	applyLedger(t, nil, readLedger(series, until, item, partial))
}
