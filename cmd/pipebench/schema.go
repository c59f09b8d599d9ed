package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
	"github.com/pipebench/pipebench/report"
	"github.com/pipebench/pipebench/scenario"
)

func (a *app) schemaCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the scenario JSON Schema (for editor completion), generated from the plug-ins' Go types",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := scenario.Schema(a.reg)
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(append(b, '\n'))
			return err
		},
	}
}

func (a *app) reportCommand() *cobra.Command {
	var format, out, storeRef string
	cmd := &cobra.Command{
		Use:   "report RESULT.json|RUN",
		Short: "Render a saved Result again, in any format, offline",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, ok := report.Lookup(format)
			if !ok {
				return pipebench.UsageError(fmt.Sprintf("unknown --format %q", format), "valid formats: "+fmt.Sprint(report.Names()), nil)
			}
			res, err := readResult(args[0])
			if err != nil {
				// Not a file: perhaps a run in the history.
				if _, statErr := os.Stat(args[0]); os.IsNotExist(statErr) {
					if saved, err2 := a.loadRun(storeRef, args[0]); err2 == nil {
						res, err = saved, nil
					}
				}
			}
			if err != nil {
				return err
			}
			if out == "" {
				return rep.Report(a.stdout, res)
			}
			return writeAtomic(out, func(w io.Writer) error { return rep.Report(w, res) })
		},
	}
	cmd.Flags().StringVarP(&format, "format", "f", "text", "text, md, json, csv, junit, html")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	storeFlag(cmd, &storeRef)
	return cmd
}

// readResult reads a Result JSON file.
func readResult(path string) (*pipebench.Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, pipebench.UsageError("cannot read the result", "give the path of a file written by `pipebench run --out`", err)
	}
	var res pipebench.Result
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, pipebench.UsageError(fmt.Sprintf("%s is not a pipebench result", path), "give the path of a file written by `pipebench run --out`", err)
	}
	if res.Schema == 0 || res.Schema > pipebench.ResultSchema {
		return nil, pipebench.UsageError(fmt.Sprintf("%s has result schema %d; this pipebench reads up to %d", path, res.Schema, pipebench.ResultSchema), "", nil)
	}
	return &res, nil
}
