package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pipebench/pipebench"
)

// WritePlan writes the plan as a table a person can check before a run
// (`pipebench plan`).
func WritePlan(w io.Writer, plan pipebench.Plan) {
	fmt.Fprintf(w, "scenario %s", plan.Scenario)
	if plan.Version != "" {
		fmt.Fprintf(w, " (version %s)", plan.Version)
	}
	fmt.Fprintf(w, "\ntarget   %s", plan.Target.Type)
	if plan.SUT != nil {
		fmt.Fprintf(w, " -> embedded %s", plan.SUT.Type)
	}
	if plan.Sink != nil {
		fmt.Fprintf(w, " -> sink %s", plan.Sink.Type)
	}
	for _, o := range plan.Observers {
		fmt.Fprintf(w, "\nobserve  %s (%s)", o.Name, o.Type)
	}
	fmt.Fprintf(w, "\nworkload %s, %d item(s) per send\n\n", plan.Workload.Type, batchOf(plan))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PHASE\tPROFILE\tDURATION\tITEMS\tMAX IN FLIGHT\tSINK FAULTS")
	for _, ph := range plan.Phases {
		prof := Profile(ph)
		if ph.Tick > 0 {
			prof += ", tick " + ph.Tick.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", ph.Name, prof, ph.Duration,
			Group(float64(ph.Items)), ph.MaxInFlight, ph.Faults.String())
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntotal: %s items over %s of load; drain up to %s; at most %s in all\n",
		Group(float64(plan.Items())), pipebench.FormatDuration(plan.Duration()), plan.Drain,
		pipebench.FormatDuration(plan.Duration()+plan.Drain.D()))
	if len(plan.Thresholds) > 0 {
		fmt.Fprintln(w, "thresholds:")
		for _, t := range plan.Thresholds {
			where := "every phase"
			if t.Phase != "" {
				where = "phase " + t.Phase
			}
			fmt.Fprintf(w, "  %s  (%s)\n", t.Expr, where)
		}
	}
}

func batchOf(plan pipebench.Plan) int {
	if len(plan.Phases) > 0 && plan.Phases[0].BatchSize > 0 {
		return plan.Phases[0].BatchSize
	}
	return 1
}

// Profile describes a phase's load profile in words ("ramp 10/s -> 100/s").
func Profile(ph pipebench.PlanPhase) string {
	p := ph.Profile
	var s string
	switch p.Kind {
	case pipebench.ProfileConstant:
		s = "constant " + p.Rate.String()
	case pipebench.ProfileRamp:
		s = fmt.Sprintf("ramp %s -> %s", p.From, p.To)
	case pipebench.ProfileSteps:
		parts := make([]string, len(p.Steps))
		for i, st := range p.Steps {
			parts[i] = fmt.Sprintf("%s for %s", st.Rate, st.Duration)
		}
		s = "steps " + strings.Join(parts, ", ")
	case pipebench.ProfileBurst:
		s = "constant " + p.Rate.String()
		if p.Burst != nil {
			s += fmt.Sprintf(", bursts of %s for %s every %s", p.Burst.Rate, p.Burst.For, p.Burst.Every)
		}
	case pipebench.ProfileBlast:
		s = fmt.Sprintf("blast %d items with %d workers", p.Count, p.Workers)
	case pipebench.ProfileProducers:
		rate := 0.0
		if c, err := ph.Curve(); err == nil {
			rate = c.RateAt(0)
		}
		s = fmt.Sprintf("%s producers every %s (%s) = %s/s", pipebench.FormatCount(float64(p.Count)), p.Every, p.Align, pipebench.FormatCount(rate))
	default:
		s = string(p.Kind)
	}
	if ph.Stagger > 0 {
		s += fmt.Sprintf(" (stagger %s)", ph.Stagger)
	}
	return s
}
