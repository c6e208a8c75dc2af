package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gsvfs/gsvfs/vfs/fusefs"
)

func umountCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "unmount a gsvfs mount; the daemon serving it exits",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fusefs.Unmount(args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gsvfs: unmounted %s\n", args[0])
			return err
		},
	}
}
