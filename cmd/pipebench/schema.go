package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench"
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
