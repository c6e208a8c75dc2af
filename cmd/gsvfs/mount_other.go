//go:build !linux

package main

import (
	"errors"
	"runtime"

	"github.com/spf13/cobra"
)

// errNoFUSE is what mount and umount say where gsvfs has no FUSE edge:
// such a machine serves its tree (gsvfs serve) and is mounted elsewhere.
var errNoFUSE = errors.New("gsvfs mounts with Linux's FUSE only; on " + runtime.GOOS +
	" run gsvfs serve (as a device, see gsvfs-devices(7)) and mount its tree from Linux")

func mountCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "mount MOUNTPOINT",
		Short: "mount the tree with FUSE (Linux only)",
		RunE:  func(*cobra.Command, []string) error { return errNoFUSE },
	}
}

func umountCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "unmount a gsvfs mount (Linux only)",
		RunE:  func(*cobra.Command, []string) error { return errNoFUSE },
	}
}
