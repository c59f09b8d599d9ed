// Package junit writes a Result as a JUnit XML test suite, so CI systems
// show thresholds as test cases: one per threshold verdict, plus one that
// fails when the run was invalid or aborted.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/pipebench/pipebench"
)

type suites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []suite  `xml:"testsuite"`
}

type suite struct {
	Name     string     `xml:"name,attr"`
	Tests    int        `xml:"tests,attr"`
	Failures int        `xml:"failures,attr"`
	Time     float64    `xml:"time,attr"`
	Cases    []testcase `xml:"testcase"`
}

type testcase struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Failure   *failure `xml:"failure,omitempty"`
}

type failure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// New returns the JUnit reporter.
func New() pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		m := r.Manifest
		s := suite{Name: "pipebench." + m.Scenario, Time: m.Ended.Sub(m.Started).Seconds()}
		valid := testcase{Name: "run valid", Classname: s.Name}
		if m.Status == pipebench.StatusInvalid || m.Status == pipebench.StatusAborted || m.Status == pipebench.StatusError {
			valid.Failure = &failure{Message: string(m.Status), Text: fmt.Sprint(m.Reasons)}
		}
		s.Cases = append(s.Cases, valid)
		for _, t := range r.Thresholds {
			c := testcase{Name: fmt.Sprintf("%s [%s]", t.Expr, t.Phase), Classname: s.Name}
			if !t.Passed {
				c.Failure = &failure{Message: t.Message, Text: fmt.Sprintf("observed %g, limit %g", t.Observed, t.Limit)}
			}
			s.Cases = append(s.Cases, c)
		}
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
		}
		io.WriteString(w, xml.Header)
		enc := xml.NewEncoder(w)
		enc.Indent("", "  ")
		if err := enc.Encode(suites{Suites: []suite{s}}); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n")
		return err
	})
}
