package suite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/pipebench/pipebench/internal/format/yamlnode"
)

// The lifetimes of a suite's system under test.
const (
	SUTFresh = "fresh" // started and stopped with each case (the default)
	SUTKeep  = "keep"  // started for the first case and kept running until the suite ends
)

// Status is how a suite words each case against its baseline, as the
// reference reports do (Stable, Slower, Degraded, Test invalid):
//
//	status:
//	  kpi: apiserver_latency_seconds.p75   # compared with the baseline case's
//	  phase: sustained                     # optional: the KPI of that phase (default: the run's total)
//	  rules:                               # the first that holds names the case
//	    - {word: Degraded, above: 10x}     # more than 10 times the baseline's value
//	    - {word: Slower, above: 3x}
//	  otherwise: Stable
//	  saturated: Saturated                 # the system held sends back, no rule said worse
//	  invalid: Test invalid                # an invalid run, with its reason
type Status struct {
	KPI, Phase string
	Rules      []StatusRule
	Otherwise  string
	Invalid    string
	// Saturated is the word of a case whose system under test held sends
	// back when no rule named it worse (Saturated): such a case is not
	// Stable.
	Saturated string
	Line, Col int
}

// StatusRule names a case whose KPI is more than Above times the baseline's.
type StatusRule struct {
	Word  string
	Above float64
}

var (
	statusKeys = []string{"kpi", "phase", "rules", "otherwise", "invalid", "saturated"}
	ruleKeys   = []string{"word", "above"}
)

// status decodes a suite's status: section.
func (d *decoder) status(n ast.Node) *Status {
	fs, ok := d.fields(n, "status", statusKeys)
	if !ok {
		return nil
	}
	st := &Status{Otherwise: "Stable", Invalid: "Test invalid", Saturated: "Saturated"}
	st.Line, st.Col = yamlnode.Pos(n)
	for _, fl := range fs {
		p := "status." + fl.key
		switch fl.key {
		case "kpi":
			st.KPI, _ = d.scalar(fl.val, p, "a KPI name like apiserver_latency_seconds.p75")
		case "phase":
			st.Phase, _ = d.scalar(fl.val, p, "a phase name")
		case "otherwise":
			st.Otherwise, _ = d.scalar(fl.val, p, "a word like Stable")
		case "invalid":
			st.Invalid, _ = d.scalar(fl.val, p, "a word like Test invalid")
		case "saturated":
			st.Saturated, _ = d.scalar(fl.val, p, "a word like Saturated")
		case "rules":
			seq, ok := yamlnode.Unwrap(fl.val).(*ast.SequenceNode)
			if !ok || len(seq.Values) == 0 {
				d.add(fl.val, p, "expected a list of {word, above}, like - {word: Slower, above: 3x}")
				break
			}
			for i, item := range seq.Values {
				rp := fmt.Sprintf("%s[%d]", p, i)
				rfs, ok := d.fields(item, rp, ruleKeys)
				if !ok {
					continue
				}
				var r StatusRule
				for _, rf := range rfs {
					switch rf.key {
					case "word":
						r.Word, _ = d.scalar(rf.val, rp+".word", "a word like Slower")
					case "above":
						v, ok := d.scalar(rf.val, rp+".above", "a ratio to the baseline like 3x")
						if !ok {
							break
						}
						x, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "x"), 64)
						if err != nil || x <= 0 {
							d.add(rf.val, rp+".above", "%q is not a ratio to the baseline like 3x (more than 0)", v)
							break
						}
						r.Above = x
					}
				}
				if r.Word == "" || r.Above == 0 {
					d.add(item, rp, "a rule needs a word and a ratio: {word: Slower, above: 3x}")
					continue
				}
				st.Rules = append(st.Rules, r)
			}
		}
	}
	if st.KPI == "" {
		d.add(n, "status.kpi", "missing: the KPI compared with the baseline's, like apiserver_latency_seconds.p75")
	}
	return st
}

// sutLifetime decodes the suite's sut: key.
func (d *decoder) sutLifetime(n ast.Node) string {
	v, ok := d.scalar(n, "sut", "keep or fresh")
	if !ok {
		return ""
	}
	if v != SUTKeep && v != SUTFresh {
		d.add(n, "sut", "unknown %q: keep (one system under test for every case, as a report's bursts ran one after another on the same database) or fresh (one per case)", v)
		return ""
	}
	return v
}

// Baseline returns the suite's baseline entry's case ("" without one).
func (s *Suite) Baseline() string {
	for _, e := range s.Entries {
		if e.Baseline {
			return e.Case
		}
	}
	return ""
}

// checkBaseline asks for exactly one baseline entry, with a case, when the
// suite has status rules, and for no more than one otherwise.
func (d *decoder) checkBaseline(s *Suite) {
	n := 0
	for _, e := range s.Entries {
		if e.Baseline {
			n++
			if e.Case == "" {
				d.errs = append(d.errs, Problem{File: d.file, Line: e.Line, Column: 1, Path: "scenarios", Msg: "the baseline entry needs a case: (its row's label, like Baseline)"})
			}
		}
	}
	switch {
	case n > 1:
		d.errs = append(d.errs, Problem{File: d.file, Line: 1, Column: 1, Path: "scenarios", Msg: fmt.Sprintf("%d entries say baseline: true; a suite has one baseline", n)})
	case n == 0 && s.Status != nil:
		d.errs = append(d.errs, Problem{File: d.file, Line: s.Status.Line, Column: s.Status.Col, Path: "status", Msg: "status rules compare with a baseline: mark one entry baseline: true (the same system without load)"})
	}
}
