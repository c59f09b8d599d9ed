// Package junit writes a Result as a JUnit XML test suite, so CI systems
// show thresholds as test cases: one per threshold verdict, with the time
// of the phase it judged, plus a "run valid" case that fails when the run
// was invalid, aborted, or could not run, and one per failure pipebench
// detected in the system under test. The KPI table goes to the suite's
// system-out, so a CI page shows the numbers beside the verdicts.
package junit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
)

type suites struct {
	XMLName xml.Name `xml:"testsuites"`
	Suites  []suite  `xml:"testsuite"`
}

type suite struct {
	Name      string     `xml:"name,attr"`
	Tests     int        `xml:"tests,attr"`
	Failures  int        `xml:"failures,attr"`
	Time      float64    `xml:"time,attr"`
	Timestamp string     `xml:"timestamp,attr,omitempty"`
	Cases     []testcase `xml:"testcase"`
	SystemOut *cdata     `xml:"system-out,omitempty"`
}

// cdata keeps a multi-line text readable in the file.
type cdata struct {
	Text string `xml:",cdata"`
}

type testcase struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      float64  `xml:"time,attr"`
	Failure   *failure `xml:"failure,omitempty"`
}

type failure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// New returns the JUnit reporter.
func New() pipebench.Reporter {
	return pipebench.ReporterFunc(func(w io.Writer, r *pipebench.Result) error {
		m := r.Manifest
		s := suite{Name: "pipebench." + m.Scenario, Time: seconds(m.Ended.Sub(m.Started).Seconds())}
		if !m.Started.IsZero() {
			s.Timestamp = m.Started.UTC().Format("2006-01-02T15:04:05")
		}
		if m.Case != "" && m.Case != m.Scenario {
			s.Name += "." + m.Case
		}
		valid := testcase{Name: "run valid", Classname: s.Name, Time: s.Time}
		switch m.Status {
		case pipebench.StatusInvalid, pipebench.StatusAborted, pipebench.StatusError, pipebench.StatusRunning:
			valid.Failure = &failure{Message: string(m.Status) + ": " + first(m.Reasons), Type: string(m.Status), Text: strings.Join(m.Reasons, "\n")}
		}
		s.Cases = append(s.Cases, valid)
		phaseTime := map[string]float64{}
		for _, p := range r.Phases {
			phaseTime[p.Name] = seconds(p.Ended.Sub(p.Started).Seconds())
		}
		for _, t := range r.Thresholds {
			c := testcase{Name: fmt.Sprintf("%s [%s]", t.Expr, t.Phase), Classname: s.Name, Time: phaseTime[t.Phase]}
			if !t.Passed {
				c.Failure = &failure{Message: t.Message, Type: "threshold", Text: fmt.Sprintf("phase %s: %s", t.Phase, t.Message)}
			}
			s.Cases = append(s.Cases, c)
		}
		for _, reason := range m.Reasons {
			// A failure of the system under test that is no threshold
			// (it died during the run) is a case of its own.
			if strings.HasPrefix(reason, "the system under test failed") {
				s.Cases = append(s.Cases, testcase{Name: "system under test ran to the end", Classname: s.Name, Time: s.Time,
					Failure: &failure{Message: first(strings.Split(reason, "\n")), Type: "sut", Text: reason}})
			}
		}
		for _, c := range s.Cases {
			s.Tests++
			if c.Failure != nil {
				s.Failures++
			}
		}
		s.SystemOut = &cdata{table(r)}
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

// table is the run's KPI table as plain text, for system-out.
func table(r *pipebench.Result) string {
	phases, rows := report.Table(r)
	if len(phases) == 0 {
		return strings.Join(append([]string{report.Status(r)}, r.Manifest.Reasons...), "\n")
	}
	var b strings.Builder
	b.WriteString(report.Status(r) + "\n\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "\t")
	for _, p := range phases {
		fmt.Fprintf(tw, "\t%s", p.Name)
	}
	fmt.Fprintln(tw)
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s", row.Group, row.Label)
		for _, c := range row.Cells {
			fmt.Fprintf(tw, "\t%s", c)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, s := range r.Summary {
		b.WriteString("\n" + s)
	}
	return report.Printable(b.String())
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// seconds rounds to the millisecond, as JUnit times are read.
func seconds(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
