package command

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/store"
)

// openStore opens the history named by --store (default: store.DefaultPath).
func (a *app) openStore(ref string) (pipebench.Store, error) {
	s, err := store.Open(a.ctx, ref)
	if err != nil {
		var pe *pipebench.Error
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, pipebench.UsageError("cannot open the results history", "check --store (a SQLite file path)", err)
	}
	return s, nil
}

func storeFlag(cmd *cobra.Command, ref *string) {
	cmd.Flags().StringVar(ref, "store", "", "results history: a SQLite file or postgres://USER:PASS@HOST:PORT/DB (default "+store.DefaultPath()+")")
}

func (a *app) historyCommands() []*cobra.Command {
	var ref, scenario, version, format string
	var limit int
	var since sinceFlag
	history := &cobra.Command{
		Use:   "history",
		Short: "List saved runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format); err != nil {
				return err
			}
			s, err := a.openStore(ref)
			if err != nil {
				return err
			}
			defer s.Close()
			f := pipebench.RunFilter{Scenario: scenario, Version: version, Limit: limit}
			if since > 0 {
				f.Since = time.Now().Add(-since.D())
			}
			runs, err := s.Runs(a.ctx, f)
			if err != nil {
				return err
			}
			if format == "json" {
				out := historyJSON{Kind: "history", Format: jsonFormat, Runs: []historyRun{}}
				for _, r := range runs {
					out.Runs = append(out.Runs, historyRun{ID: string(r.ID), Scenario: r.Scenario, Version: r.Version, Status: string(r.Status),
						Started: r.Started, Seconds: num(r.Duration.Seconds())})
				}
				return writeJSON(a.stdout, out)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSCENARIO\tVERSION\tSTATUS\tSTARTED\tDURATION")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Scenario, r.Version, r.Status,
					r.Started.Local().Format("2006-01-02 15:04:05"), r.Duration.Round(time.Second))
			}
			return tw.Flush()
		},
	}
	storeFlag(history, &ref)
	history.Flags().StringVar(&scenario, "scenario", "", "only runs of this scenario")
	history.Flags().StringVar(&version, "version", "", "only runs of this version of the system under test")
	history.Flags().IntVar(&limit, "limit", 50, "at most this many runs")
	history.Flags().Var(&since, "since", "only runs started within this long (e.g. 7d, 36h, 90m)")
	formatFlag(history, &format)

	var showRef, showFormat string
	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Print a saved run's KPI table (RUN may be a unique prefix of its id); --format json prints its Result",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := a.reporter(showFormat); err != nil {
				return err
			}
			res, err := a.loadRun(showRef, args[0])
			if err != nil {
				return err
			}
			rep, err := a.reg.Reporter(showFormat)
			if err != nil {
				return err
			}
			return rep.Report(a.stdout, res)
		},
	}
	storeFlag(show, &showRef)
	show.Flags().StringVar(&showFormat, "format", "text", "output format, as for report (json: the Result)")

	return []*cobra.Command{history, show, a.compareCommand(), a.gateCommand()}
}

// loadRun reads a saved run by id or prefix.
func (a *app) loadRun(ref, id string) (*pipebench.Result, error) {
	s, err := a.openStore(ref)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(a.ctx, pipebench.RunID(id))
}

// loadAll reads every run (of a scenario), oldest first.
func (a *app) loadAll(ref, scenario string) ([]*pipebench.Result, error) {
	s, err := a.openStore(ref)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return store.ReadAll(a.ctx, s, scenario)
}
