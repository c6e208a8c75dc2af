package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "print the version of gsvfs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gsvfs %s %s/%s %s\n",
				version, runtime.GOOS, runtime.GOARCH, runtime.Version())
			return err
		},
	}
}
