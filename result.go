package pipebench

import (
	"encoding/json"
	"fmt"
	"time"
)

// ResultSchema is the version of the Result document written by this build.
const ResultSchema = 1

// Status is how a run ended.
type Status string

// The ways a run can end, matching the exit codes.
const (
	StatusPassed Status = "passed" // ran, thresholds existed and every one held (exit 0)
	// StatusCompleted: ran validly, but no thresholds were set, so there is
	// no pass or fail; Result.Summary states errors and loss in words
	// (exit 0).
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"  // ran, a threshold failed (exit 99)
	StatusInvalid   Status = "invalid" // the generator could not hold the plan, or nothing reached the target (exit 98)
	StatusAborted   Status = "aborted" // stopped by a signal; partial result
	// StatusRunning marks a checkpoint: the Result of a run still going.
	StatusRunning Status = "running"
	StatusError   Status = "error" // pipebench itself failed (exit 1)
)

// Result is the canonical record of one run. Every report is rendered from
// a Result alone, so it must hold everything a report shows.
type Result struct {
	Schema   int           `json:"schema"`
	Manifest Manifest      `json:"manifest"`
	Plan     Plan          `json:"plan"`
	Phases   []PhaseResult `json:"phases"`
	// Drain holds what arrived after the last phase ended, while the
	// runner waited for the backlog: with it, the phases' delivered counts
	// add up to the total's. Nil without a sink.
	Drain *PhaseResult `json:"drain,omitempty"`
	Total *PhaseResult `json:"total,omitempty"`
	// Summary says in plain words what went wrong, whatever the verdict:
	// failed sends by class, items lost, drops.
	Summary []string `json:"summary,omitempty"`
	// Errors holds the first distinct failure messages of each outcome
	// class ("refused": ["dial tcp 127.0.0.1:4317: connect: connection
	// refused"]), so a failure keeps its cause.
	Errors     map[string][]string `json:"errors,omitempty"`
	Series     []Series            `json:"series,omitempty"`
	Thresholds []ThresholdResult   `json:"thresholds,omitempty"`
	Detections []Detection         `json:"detections,omitempty"`
}

// Manifest says what ran, where and how it ended.
type Manifest struct {
	RunID       string `json:"run_id"`
	Tool        string `json:"tool"`
	ToolVersion string `json:"tool_version"`
	Scenario    string `json:"scenario"`
	File        string `json:"file,omitempty"`
	// Version labels the system under test ("0.100.0"); runs of
	// different versions line up as rows in comparisons.
	Version string `json:"version,omitempty"`
	// Case names the test case within a comparison ("single pipeline",
	// "backpressure"); defaults to the scenario name.
	Case   string            `json:"case,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
	Target string            `json:"target,omitempty"` // driver name and endpoint
	// Item names one item in singular ("span", "metric point", "log
	// record", "event"); reports use it in column headers.
	Item      string    `json:"item,omitempty"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Host      string    `json:"host,omitempty"`
	GoVersion string    `json:"go_version,omitempty"`
	Args      []string  `json:"args,omitempty"`
	Status    Status    `json:"status"`
	// Reasons explain an invalid, aborted or failed run in plain words.
	Reasons []string `json:"reasons,omitempty"`
}

// Unit names the unit of a KPI or series.
type Unit string

// The units KPIs use.
const (
	UnitPerSecond Unit = "/s"
	UnitMillis    Unit = "ms"
	UnitSeconds   Unit = "s"
	UnitCount     Unit = "count"
	UnitMB        Unit = "MB"
	// UnitMBPerSecond is megabytes (10^6 bytes) per second.
	UnitMBPerSecond Unit = "MB/s"
	UnitCores       Unit = "cores"
	UnitRatio       Unit = "ratio"
)

// KPI is one named number of a phase: `sent_rate`, `latency.p99`,
// `errors{class="timeout"}`, `memory_mb{instance="collector-0"}`. The names
// are listed in DESIGN.md; add names, never rename them.
type KPI struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
	Unit   Unit              `json:"unit,omitempty"`
	// LastReading marks an observed KPI whose series had no reading inside
	// the phase (every scrape in it failed, or the phase was shorter than
	// the interval): the value is the series' last reading before the
	// phase, which reports mark as such.
	LastReading bool `json:"last_reading,omitempty"`
}

// Key returns the KPI's name with its labels, as thresholds write it:
// `errors{class="timeout"}`.
func (k KPI) Key() string { return KeyOf(k.Name, k.Labels) }

// PhaseResult holds the KPIs of one phase (or, as Result.Total, of the whole
// run).
type PhaseResult struct {
	Name    string    `json:"name"`
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended"`
	KPIs    []KPI     `json:"kpis"`
	// Histograms holds, in a shard's Result, the phase's latency
	// histograms (latency, service_time, schedule_lag, e2e_latency) in
	// HdrHistogram's compressed base64 form, so that merging shards gives
	// the percentiles one generator would have recorded.
	Histograms map[string]string `json:"histograms,omitempty"`
}

// Get returns the value of the KPI with the given name and exactly the given
// labels (pairs of name, value).
func (p *PhaseResult) Get(name string, labels ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, k := range p.KPIs {
		if k.Name == name && sameLabels(k.Labels, want) {
			return k.Value, true
		}
	}
	return 0, false
}

// All returns every KPI with the given name, whatever its labels.
func (p *PhaseResult) All(name string) []KPI {
	var out []KPI
	for _, k := range p.KPIs {
		if k.Name == name {
			out = append(out, k)
		}
	}
	return out
}

// Set adds a KPI or replaces the one with the same name and labels.
func (p *PhaseResult) Set(k KPI) {
	for i := range p.KPIs {
		if p.KPIs[i].Name == k.Name && sameLabels(p.KPIs[i].Labels, k.Labels) {
			p.KPIs[i] = k
			return
		}
	}
	p.KPIs = append(p.KPIs, k)
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Series is a named time series observed or derived during the run.
type Series struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Unit   Unit              `json:"unit,omitempty"`
	Kind   MetricKind        `json:"kind"`
	Points []TimeValue       `json:"points"`
}

// Key returns the series' name with its labels.
func (s Series) Key() string { return KeyOf(s.Name, s.Labels) }

// TimeValue is one point of a Series. In JSON it is the pair
// [unix milliseconds, value], to keep long runs compact.
type TimeValue struct {
	T time.Time
	V float64
}

// MarshalJSON writes [unix_ms, value].
func (tv TimeValue) MarshalJSON() ([]byte, error) {
	return json.Marshal([2]float64{float64(tv.T.UnixMilli()), tv.V})
}

// UnmarshalJSON reads [unix_ms, value].
func (tv *TimeValue) UnmarshalJSON(b []byte) error {
	var pair [2]float64
	if err := json.Unmarshal(b, &pair); err != nil {
		return fmt.Errorf("series point must be [unix_ms, value]: %w", err)
	}
	tv.T = time.UnixMilli(int64(pair[0])).UTC()
	tv.V = pair[1]
	return nil
}

// ThresholdResult is the verdict of one threshold on one phase.
type ThresholdResult struct {
	Expr     string  `json:"expr"`
	Phase    string  `json:"phase"`
	Passed   bool    `json:"passed"`
	Observed float64 `json:"observed"`
	Limit    float64 `json:"limit"`
	Message  string  `json:"message,omitempty"`
}

// Detection is a failure pattern found in the series: a stall, a backlog
// growing without bound, a generator shortfall, a memory leak slope, storage
// filling up.
type Detection struct {
	Detector string    `json:"detector"`
	Series   string    `json:"series,omitempty"`
	Phase    string    `json:"phase,omitempty"`
	Began    time.Time `json:"began"`
	Message  string    `json:"message"`
	// Value is the detector's main figure (a slope, an ETA in seconds).
	Value float64 `json:"value,omitempty"`
}

// KeyOf writes a name and labels as `name{a="1",b="2"}`, labels sorted.
func KeyOf(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sortStrings(keys)
	s := name + "{"
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%s=%q", k, labels[k])
	}
	return s + "}"
}
