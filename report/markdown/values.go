package markdown

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pipebench/pipebench"
)

// Values are the run's own values a column may show instead of a KPI, with
// what each shows. "@label:KEY" shows the run's label KEY.
var Values = map[string]string{
	"@case":     "the run's case (the scenario's name when it has none)",
	"@scenario": "the scenario's name",
	"@version":  "the version label of the system under test",
	"@status":   "passed, completed, failed, invalid or aborted",
	"@duration": "how long the run lasted, start to end",
	"@failure":  "the failures detected (not the warnings), by the reference reports' names (full storage (F1), F3 dispatch stalled...)",
	"@crashed":  "yes when storage filled up or delivery stalled, else no",
}

// LabelValue is the prefix of a column showing one of the run's labels.
const LabelValue = "@label:"

// failureNames are the detectors' names as the eventing reference reports
// them; others show as the detector's name with spaces.
var failureNames = map[string]string{
	"storage_full_node": "full storage (F1)",
	"storage_full_all":  "full storage (F2)",
	"dispatch_stalled":  "F3 dispatch stalled",
	"shortfall":         "F4 generator short of target",
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
// bus crashed: storage full on a node or all, a stream full, delivery stalled.
var crashes = map[string]bool{
	"storage_full_node": true, "storage_full_all": true, "storage_full": true,
	"stream_full": true, "dispatch_stalled": true, "stall": true,
}

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
	key, ok := strings.CutPrefix(name, LabelValue)
	return ok && key != ""
}

func runValue(r *pipebench.Result, name string) string {
	m := r.Manifest
	if key, ok := strings.CutPrefix(name, LabelValue); ok {
		return m.Labels[key]
	}
	switch name {
	case "@case":
		return caseOf(r)
	case "@scenario":
		return m.Scenario
	case "@version":
		return m.Version
	case "@status":
		return string(m.Status)
	case "@duration":
		if m.Started.IsZero() || m.Ended.Before(m.Started) {
			return ""
		}
		return humanDuration(m.Ended.Sub(m.Started))
	case "@failure":
		return failures(r)
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
	ds := append([]pipebench.Detection(nil), r.Detections...)
	sort.SliceStable(ds, func(i, j int) bool { return ds[i].Began.Before(ds[j].Began) })
	seen := map[string]bool{}
	var names []string
	for _, d := range ds {
		if !failing[d.Detector] {
			continue
		}
		n := FailureName(d.Detector)
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return strings.Join(names, "; ")
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
