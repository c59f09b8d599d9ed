package markdown

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Values are the run's own values a column may show instead of a KPI, with
// what each shows. "@label:KEY" shows the run's label KEY.
var Values = map[string]string{
	"@case":          "the run's case (the scenario's name when it has none)",
	"@scenario":      "the scenario's name",
	"@version":       "the version label of the system under test",
	"@status":        "passed, completed, failed, invalid or aborted",
	"@duration":      "how long the run lasted, start to end",
	"@failure":       "the failures detected (not the warnings), by the reference reports' names (full storage (F1), full storage (F2), F3, F4, JS pod restart...)",
	"@crashed":       "yes when storage filled up, delivery stalled or a node restarted, else no",
	"@until_failure": "the time from the load's start to the first failure detected, or the load's length when none (the eventing reference's test duration)",
	"@handled":       "the rate the system handled over the run (a proxy's handled_rate summed over instances, else receiver_accepted_rate, else accepted_rate); after a sustained drop as the eventing reference writes it, 70 (290 for 3 h): the rate after, and the rate and time before",
}

// LabelValue is the prefix of a column showing one of the run's labels.
const LabelValue = "@label:"

// InfoValue is the prefix of a column showing a label of an info series
// the observers recorded (a series of value 1 whose labels say what runs):
// @info:nats_server_info:version is the NATS version, every distinct
// value joined by commas.
const InfoValue = "@info:"

// failureNames are the detectors' names as the eventing reference reports
// them; others show as the detector's name with spaces.
var failureNames = map[string]string{
	"storage_full_node": "full storage (F1)",
	"storage_full_all":  "full storage (F2)",
	"dispatch_stalled":  "F3",
	"shortfall":         "F4",
	"node_restart":      "JS pod restart",
	"stream_full":       "stream full",
	"storage_full":      "full storage",
	"leak":              "memory growth",
}

// failing are the detectors a Failure type column names: the crashes and
// a generator short of its target (F4). Warnings (storage filling, backlog
// growth, memory growth, a throughput drop) are left to the report.
var failing = map[string]bool{"shortfall": true}

func init() {
	for d := range crashes {
		failing[d] = true
	}
}

// crashes are the detectors after which the eventing reference calls the
// bus crashed: a node's storage full or all nodes' (a nats-server out of
// storage disables JetStream), delivery stalled, a node restarted. A
// stream refusing at its own limit (stream_full, storage_full) does as it
// was configured to: no crash.
var crashes = map[string]bool{
	"storage_full_node": true, "storage_full_all": true,
	"dispatch_stalled": true, "stall": true, "node_restart": true,
}

// subsumed are failures another one names better: a stall of delivery is
// the dispatch stall (F3) when JetStream says so, the full storage's (F1,
// F2: a nats-server out of storage disables JetStream) when it filled,
// and a restart's while leaders are elected again.
var subsumed = map[string][]string{"stall": {"dispatch_stalled", "storage_full_node", "storage_full_all", "storage_full", "stream_full", "node_restart"}}

// FailureName is how a table names a detection.
func FailureName(detector string) string {
	if n, ok := failureNames[detector]; ok {
		return n
	}
	return strings.ReplaceAll(detector, "_", " ")
}

// KnownValue reports whether name is a run value a column may show.
func KnownValue(name string) bool {
	if _, ok := Values[name]; ok {
		return true
	}
	if key, ok := strings.CutPrefix(name, LabelValue); ok {
		return key != ""
	}
	series, label, ok := strings.Cut(strings.TrimPrefix(name, InfoValue), ":")
	return strings.HasPrefix(name, InfoValue) && ok && series != "" && label != ""
}

func runValue(r *pipebench.Result, name string) string {
	m := r.Manifest
	if key, ok := strings.CutPrefix(name, LabelValue); ok {
		return m.Labels[key]
	}
	if rest, ok := strings.CutPrefix(name, InfoValue); ok {
		series, label, _ := strings.Cut(rest, ":")
		return infoLabel(r, series, label)
	}
	switch name {
	case "@until_failure":
		return untilFailure(r)
	case "@handled":
		return handled(r)
	case "@case":
		return caseOf(r)
	case "@scenario":
		return m.Scenario
	case "@version":
		return m.Version
	case ScaleValue:
		if s := scaleOf(r); s != "" {
			return s
		}
		return "as written"
	case "@status":
		return string(m.Status)
	case "@duration":
		if m.Started.IsZero() || m.Ended.Before(m.Started) {
			return ""
		}
		return humanDuration(m.Ended.Sub(m.Started))
	case "@failure":
		return failures(r)
	case LimitValue:
		return LimitWords(r)
	case LoadValue:
		return loadTime(r)
	case "@crashed":
		for _, d := range r.Detections {
			if crashes[d.Detector] {
				return "yes"
			}
		}
		return "no"
	}
	return ""
}

// failures names the detections of a run, first detected first, each once.
func failures(r *pipebench.Result) string {
	seen := map[string]bool{}
	var names []string
	for _, d := range FailingDetectors(r) {
		n := FailureName(d)
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return strings.Join(names, "; ")
}

// FailingDetectors are the detectors a Failure type column names for a
// run, first detected first, each once: the failures (crashes and the
// generator short of its target), without those another names better
// (subsumed) and without a shortfall that began after a crash (the
// generator held back by a system that stopped answering: the crash's
// consequence, not F4).
func FailingDetectors(r *pipebench.Result) []string {
	ds := append([]pipebench.Detection(nil), r.Detections...)
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Began.Before(ds[j].Began) })
	present := map[string]bool{}
	var crashed time.Time // the first crash other than a stall of delivery
	for _, d := range ds {
		present[d.Detector] = true
		if crashes[d.Detector] && d.Detector != "stall" && crashed.IsZero() {
			crashed = d.Began
		}
	}
	var out []string
	for _, d := range ds {
		if !failing[d.Detector] || slices.Contains(out, d.Detector) || slices.ContainsFunc(subsumed[d.Detector], func(by string) bool { return present[by] }) {
			continue
		}
		if d.Detector == "shortfall" && !crashed.IsZero() && !d.Began.Before(crashed) {
			continue
		}
		out = append(out, d.Detector)
	}
	return out
}

// humanDuration writes a run's length as the reference tables do: "5 h",
// "4 h 20 min", "1 min 30 s", "45 s".
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	var parts []string
	if h > 0 {
		parts = append(parts, strconv.Itoa(h)+" h")
	}
	if m > 0 {
		parts = append(parts, strconv.Itoa(m)+" min")
	}
	if (s > 0 && h == 0) || len(parts) == 0 {
		parts = append(parts, strconv.Itoa(s)+" s")
	}
	return strings.Join(parts, " ")
}

// untilFailure is the time from the load's start to the first failure
// detected, or the load's length.
func untilFailure(r *pipebench.Result) string {
	if len(r.Phases) == 0 {
		return ""
	}
	start, end := r.Phases[0].Started, r.Phases[len(r.Phases)-1].Ended
	for _, d := range r.Detections {
		if failing[d.Detector] && d.Began.After(start) && d.Began.Before(end) {
			end = d.Began
		}
	}
	return humanDuration(end.Sub(start))
}

// handled is the handled rate over the run, or after a sustained drop the
// rate after it with the rate and time before.
func handled(r *pipebench.Result) string {
	t := r.Total
	if t == nil {
		return ""
	}
	if after, ok := t.Get("rate_after_drop"); ok {
		before, _ := t.Get("rate_before_drop")
		secs, _ := t.Get("time_before_drop")
		return plain(after) + " (" + plain(before) + " for " + humanDuration(time.Duration(secs*float64(time.Second))) + ")"
	}
	for _, name := range []string{"handled_rate", "receiver_accepted_rate"} {
		if ks := t.All(name); len(ks) > 0 {
			sum := 0.0
			for _, k := range ks {
				sum += k.Value
			}
			return plain(sum)
		}
	}
	if v, ok := t.Get("accepted_rate"); ok {
		return plain(v)
	}
	return ""
}

// infoLabel lists the distinct values of label over the series called
// name, in order of appearance.
func infoLabel(r *pipebench.Result, name, label string) string {
	var vals []string
	for _, s := range r.Series {
		if v := s.Labels[label]; s.Name == name && v != "" && !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	return strings.Join(vals, ", ")
}
