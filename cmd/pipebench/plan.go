package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/scenario"
)

func (a *app) validateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "validate scenario.yaml...",
		Short: "Check scenario files and report every problem with file:line:col (sends nothing)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, ref := range args {
				sc, err := a.loadScenario(ref)
				if err == nil {
					_, err = scenario.Compile(sc)
				}
				if err != nil {
					bad++
					printError(a.stderr, err)
					continue
				}
				fmt.Fprintf(a.stdout, "%s: ok (%s, %d phases)\n", ref, sc.Name, len(sc.Phases))
			}
			if bad > 0 {
				return &silentExit{code: pipebench.ExitUsage}
			}
			return nil
		},
	}
}

func (a *app) planCommand() *cobra.Command {
	var asJSON bool
	var total time.Duration
	cmd := &cobra.Command{
		Use:   "plan [scenario.yaml | builtin:NAME]",
		Short: "Print the compiled plan: phases, rates, durations, items, expected run time (sends nothing)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref := defaultScenario
			if len(args) == 1 {
				ref = args[0]
			}
			sc, err := a.loadScenario(ref)
			if err != nil {
				return err
			}
			plan, err := compile(sc, total, cmd.Flags().Changed("duration"), "")
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(plan.Redacted())
			}
			printPlan(a.stdout, plan)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().DurationVar(&total, "duration", 0, "scale every phase so the load lasts this long in total")
	return cmd
}

// printPlan writes the plan as a table a person can check before a run.
func printPlan(w io.Writer, plan pipebench.Plan) {
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", ph.Name, describeProfile(ph), ph.Duration,
			report.Group(float64(ph.Items)), ph.MaxInFlight, describeFaults(ph.Faults))
	}
	tw.Flush()
	fmt.Fprintf(w, "\ntotal: %s items over %s of load; drain up to %s; at most %s in all\n",
		report.Group(float64(plan.Items())), pipebench.FormatDuration(plan.Duration()), plan.Drain,
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

func describeProfile(ph pipebench.PlanPhase) string {
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

func describeFaults(f pipebench.FaultPolicy) string {
	if f.IsZero() {
		return "-"
	}
	var parts []string
	if f.ErrorRatio > 0 {
		parts = append(parts, fmt.Sprintf("%.0f%% answered %d", f.ErrorRatio*100, f.ErrorStatus))
	}
	if l := f.Latency; l != nil {
		switch l.Kind {
		case "uniform":
			parts = append(parts, fmt.Sprintf("+%s..%s latency", l.Min, l.Max))
		case "normal":
			parts = append(parts, fmt.Sprintf("+%s±%s latency", l.Mean, l.StdDev))
		case "exponential":
			parts = append(parts, fmt.Sprintf("+exp(%s) latency", l.Mean))
		default:
			parts = append(parts, fmt.Sprintf("+%s latency", l.Fixed))
		}
	}
	if f.RateLimit > 0 {
		parts = append(parts, "limit "+f.RateLimit.String())
		if f.RateLimitBurst > 0 {
			parts = append(parts, "burst "+f.RateLimitBurst.String())
		}
	}
	for _, o := range f.Outages {
		parts = append(parts, fmt.Sprintf("outage at %s for %s", o.Start, o.Duration))
	}
	if f.Pipeline != "" {
		return "pipeline " + f.Pipeline + " only: " + strings.Join(parts, "; ")
	}
	return strings.Join(parts, "; ")
}
