package command

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench/internal/cli/buildinfo"
)

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, module version, commit and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(a.stdout, buildinfo.Read(version).String())
			return nil
		},
	}
}
