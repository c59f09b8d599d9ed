package command

import (
	"github.com/spf13/cobra"

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
