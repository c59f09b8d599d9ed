package promql

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Stage is one stage of the pipeline in the run's stage breakdown (where
// the time goes, stage by stage): its time per event from a histogram's
// _sum and _count, its queue from a gauge, or, for the sending, a phase of
// the run itself. The observer reports it as stage_seconds and
// stage_events (counters: the histogram's sum and count over its series),
// stage_queue (a gauge: the max over its series) and stage_phase, each
// labelled stage (the name), mode and order; report/markdown's Stages
// makes the table from them.
type Stage struct {
	// Name is the row's label: "FQM processing [D]->[E]".
	Name string `yaml:"name" json:"name"`
	// Histogram is a histogram metric's name (its _sum and _count are
	// read), like platform_connector_store_duration_seconds.
	Histogram string `yaml:"histogram" json:"histogram,omitempty"`
	// Queue is a gauge of what waits for the stage.
	Queue string `yaml:"queue" json:"queue,omitempty"`
	// Phase names a phase of the run whose time is the stage's (the
	// blast's sending, [A]->[B]).
	Phase string `yaml:"phase" json:"phase,omitempty"`
	// Mode is sequential (one event at a time: its time adds up in the
	// total) or parallel (several at once: overlapped).
	Mode string `yaml:"mode" json:"mode"`
}

// The stage series the observer reports.
const (
	StageSeconds = "stage_seconds"
	StageEvents  = "stage_events"
	StageQueue   = "stage_queue"
	StagePhase   = "stage_phase"
)

func validateStages(stages []Stage) []error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range stages {
		at := fmt.Sprintf("stages: entry %d", i)
		switch {
		case strings.TrimSpace(s.Name) == "":
			errs = append(errs, fmt.Errorf("%s: name is empty", at))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("%s: name %q is used twice", at, s.Name))
		}
		seen[s.Name] = true
		if s.Histogram == "" && s.Queue == "" && s.Phase == "" {
			errs = append(errs, fmt.Errorf("%s (%s): give a histogram, a queue or a phase", at, s.Name))
		}
		if s.Histogram != "" && !nameRE.MatchString(s.Histogram) {
			errs = append(errs, fmt.Errorf("%s (%s): histogram %q is not a metric name", at, s.Name, s.Histogram))
		}
		if s.Queue != "" && !nameRE.MatchString(s.Queue) {
			errs = append(errs, fmt.Errorf("%s (%s): queue %q is not a metric name", at, s.Name, s.Queue))
		}
		if s.Mode != "sequential" && s.Mode != "parallel" {
			errs = append(errs, fmt.Errorf("%s (%s): mode %q is not sequential or parallel", at, s.Name, s.Mode))
		}
	}
	if len(errs) > 0 {
		return []error{errors.Join(errs...)}
	}
	return nil
}

// stageQueries are the PromQL queries of the stages, each labelled with
// its stage.
func stageQueries(stages []Stage) []Query {
	var out []Query
	for i, s := range stages {
		l := map[string]string{"stage": s.Name, "mode": s.Mode, "order": strconv.Itoa(i)}
		if s.Histogram != "" {
			out = append(out,
				Query{Name: StageSeconds, Query: "sum(" + s.Histogram + "_sum)", Kind: "counter", labels: l},
				Query{Name: StageEvents, Query: "sum(" + s.Histogram + "_count)", Kind: "counter", labels: l})
		}
		if s.Queue != "" {
			out = append(out, Query{Name: StageQueue, Query: "max(" + s.Queue + ")", labels: l})
		}
		if s.Phase != "" {
			pl := map[string]string{"phase": s.Phase}
			for k, v := range l {
				pl[k] = v
			}
			out = append(out, Query{Name: StagePhase, Query: "vector(1)", labels: pl})
		}
	}
	return out
}
