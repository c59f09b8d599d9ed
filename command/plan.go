package command

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/scenario"
)

func (a *app) validateCommand() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "validate scenario.yaml...",
		Short: "Check scenario files and report every problem with file:line:col (sends nothing)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			bad := 0
			out := validateJSON{Kind: "validate", Format: jsonFormat}
			for _, ref := range args {
				sc, err := a.loadScenario(ref)
				if err == nil {
					_, err = scenario.Compile(sc)
				}
				if err != nil && a.ctx.Err() != nil {
					return err // a signal: stop, exit 1
				}
				if err != nil {
					bad++
					msg, hint := errorParts(err)
					out.Scenarios = append(out.Scenarios, validatedScenario{Ref: ref, Error: msg, Hint: hint})
					if format != "json" {
						printError(a.stderr, err)
					}
					continue
				}
				out.Scenarios = append(out.Scenarios, validatedScenario{Ref: ref, OK: true, Name: sc.Name, Phases: len(sc.Phases)})
				if format != "json" {
					fmt.Fprintf(a.stdout, "%s: ok (%s, %d phases)\n", ref, sc.Name, len(sc.Phases))
				}
			}
			if format == "json" {
				if err := writeJSON(a.stdout, out); err != nil {
					return err
				}
			}
			if bad > 0 {
				return &silentExit{code: pipebench.ExitUsage}
			}
			return nil
		},
	}
	formatFlag(cmd, &format)
	return cmd
}

func (a *app) planCommand() *cobra.Command {
	var asJSON bool
	var format string
	var total time.Duration
	var rate string
	cmd := &cobra.Command{
		Use:   "plan [scenario.yaml | builtin:NAME]",
		Short: "Print the compiled plan: phases, rates, durations, items, expected run time (sends nothing)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			ref := defaultScenario
			if len(args) == 1 {
				ref = args[0]
			}
			sc, err := a.loadScenario(ref)
			if err != nil {
				return err
			}
			plan, err := scenario.CompileWith(sc, scenario.Overrides{Duration: total, DurationSet: cmd.Flags().Changed("duration"), Rate: rate}, time.Now())
			if err != nil {
				return err
			}
			if asJSON || format == "json" {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(plan.Redacted())
			}
			report.WritePlan(a.stdout, plan)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON (the same as --format json)")
	formatFlag(cmd, &format)
	cmd.Flags().DurationVar(&total, "duration", 0, "scale every phase so the load lasts this long in total")
	cmd.Flags().StringVar(&rate, "rate", "", "scale every rate so the highest is this, like 2000/s")
	return cmd
}
