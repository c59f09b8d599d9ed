package suite

import (
	"fmt"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/internal/format/yamlnode"
	"github.com/pipebench/pipebench/kpi"
	"github.com/pipebench/pipebench/report/markdown"
)

// Expect is the outcome a suite's case is meant to have, when it is not
// the plain one (a valid run whose thresholds, if any, held): a case that
// provokes a failure says which.
//
//   - {scenario: builtin:kyma-eventing-f4, case: F4 generator stopped, expect: {failure: F4}}
//   - {scenario: ..., expect: {status: invalid, limit: pipebench}}
//
// A case that did what it expected counts as passed for the suite's exit
// code; one that did not is named, and fails the suite. The table shows
// every case either way.
type Expect struct {
	// Status is the verdict expected: passed, completed, failed or
	// invalid ("" any but error and aborted).
	Status pipebench.Status
	// Failures are the failures the case must show, each a detector's
	// name (shortfall) or a reference report's (F4, "full storage (F2)").
	Failures []string
	// Limit is whose limit the case must hit: system (it held sends
	// back), pipebench (its own, the run invalid) or none.
	Limit string
}

// The limits a case may expect.
const (
	LimitSystem    = "system"
	LimitPipebench = "pipebench"
	LimitNone      = "none"
)

var expectKeys = []string{"status", "failure", "limit"}

// expect decodes an entry's expect: block.
func (d *decoder) expect(n ast.Node, path string) *Expect {
	fs, ok := d.fields(n, path, expectKeys)
	if !ok {
		return nil
	}
	e := &Expect{}
	for _, fl := range fs {
		p := path + "." + fl.key
		switch fl.key {
		case "status":
			v, ok := d.scalar(fl.val, p, "passed, completed, failed or invalid")
			if !ok {
				break
			}
			st := pipebench.Status(strings.ToLower(v))
			if !slices.Contains([]pipebench.Status{pipebench.StatusPassed, pipebench.StatusCompleted, pipebench.StatusFailed, pipebench.StatusInvalid}, st) {
				d.add(fl.val, p, "unknown status %q: passed, completed, failed or invalid", v)
				break
			}
			e.Status = st
		case "failure":
			if seq, ok := yamlnode.Unwrap(fl.val).(*ast.SequenceNode); ok {
				for i, item := range seq.Values {
					if v, ok := d.scalar(item, fmt.Sprintf("%s[%d]", p, i), "a failure's name, like F4 or stall"); ok && v != "" {
						e.Failures = append(e.Failures, v)
					}
				}
				break
			}
			if v, ok := d.scalar(fl.val, p, "a failure's name, like F4 or stall, or a list of them"); ok && v != "" {
				e.Failures = append(e.Failures, v)
			}
		case "limit":
			v, ok := d.scalar(fl.val, p, "system, pipebench or none")
			if ok && v != LimitSystem && v != LimitPipebench && v != LimitNone {
				d.add(fl.val, p, "unknown limit %q: system (it held sends back), pipebench (its own limit, the run invalid) or none", v)
				break
			}
			e.Limit = v
		}
	}
	if e.Status == "" && len(e.Failures) == 0 && e.Limit == "" {
		d.add(n, path, "an expectation names at least one of status, failure and limit, like {failure: F4}")
	}
	return e
}

// String says the expectation in words: "status invalid, failure F4".
func (e *Expect) String() string {
	var parts []string
	if e.Status != "" {
		parts = append(parts, "status "+string(e.Status))
	}
	if len(e.Failures) > 0 {
		parts = append(parts, "failure "+strings.Join(e.Failures, " and "))
	}
	if e.Limit != "" {
		parts = append(parts, e.Limit+"'s limit")
	}
	return strings.Join(parts, ", ")
}

// Unmet says what r did not do of what e expects (nil: it did all). A run
// that errored or was stopped never meets an expectation.
func (e *Expect) Unmet(r *pipebench.Result) []string {
	m := r.Manifest
	var out []string
	switch {
	case m.Status == pipebench.StatusError || m.Status == pipebench.StatusAborted || m.Status == pipebench.StatusRunning:
		return []string{fmt.Sprintf("the run ended %s", m.Status)}
	case e.Status != "" && m.Status != e.Status:
		out = append(out, fmt.Sprintf("status %s, not %s", m.Status, e.Status))
	case e.Status == "" && e.Limit != LimitPipebench && m.Status == pipebench.StatusInvalid:
		out = append(out, "the run was invalid")
	}
	shown := markdown.FailingDetectors(r)
	for _, d := range r.Detections {
		if !slices.Contains(shown, d.Detector) {
			shown = append(shown, d.Detector)
		}
	}
	for _, want := range e.Failures {
		if !slices.ContainsFunc(shown, func(det string) bool { return failureMatches(want, det) }) {
			var names []string
			for _, det := range markdown.FailingDetectors(r) {
				names = append(names, markdown.FailureName(det))
			}
			got := strings.Join(names, ", ")
			if got == "" {
				got = "none"
			}
			out = append(out, fmt.Sprintf("no failure %s (failures: %s)", want, got))
		}
	}
	if e.Limit != "" {
		if got := LimitOf(r); got != e.Limit {
			out = append(out, fmt.Sprintf("%s's limit, not %s's", got, e.Limit))
		}
	}
	return out
}

// failureMatches reports whether want names detector det: its own name,
// the name a reference table gives it, or the code in that name's
// parentheses ("F2" for "full storage (F2)").
func failureMatches(want, det string) bool {
	name := markdown.FailureName(det)
	w := strings.ToLower(strings.TrimSpace(want))
	return w == strings.ToLower(det) || w == strings.ToLower(name) || strings.Contains(strings.ToLower(name), "("+w+")")
}

// LimitOf says whose limit a run hit, as its @limit column does:
// pipebench (its own, as the run's validity names it), system (it held
// sends back or refused them), or none.
func LimitOf(r *pipebench.Result) string {
	if _, ok := kpi.GeneratorLimited(r); ok {
		return LimitPipebench
	}
	if strings.HasPrefix(markdown.LimitWords(r), "system ") {
		return LimitSystem
	}
	return LimitNone
}
