package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon" // not "daemon": the tests have a type of that name
	"github.com/gsvfs/gsvfs/vfs/fusefs"
)

// umountWait bounds how long gsvfs umount waits for the daemon to exit,
// as systemctl stop does (it waits 90 s, then kills).
const umountWait = 30 * time.Second

func umountCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "umount MOUNTPOINT",
		Short: "unmount a gsvfs mount and wait for the daemon serving it to exit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := unmountAndWait(args[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "gsvfs: unmounted %s\n", args[0])
			return err
		},
	}
}

// unmountAndWait unmounts the gsvfs mount at dir and, as systemctl stop
// does, waits for the daemon that served it to exit: then it holds no
// state directory, and a mount made next serves it afresh. The daemon
// sees its mount go (or leave its namespace, while sessions hold copies
// of it) and ends. Like umount(8), it fails, leaving the daemon be, while
// a process uses the mount. A mount whose daemon is gone (killed), or is
// not this user's to know, is only unmounted.
func unmountAndWait(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	pid, pidfd, ok := daemonOf(abs)
	if ok {
		defer unix.Close(pidfd)
	}
	if err := fusefs.Unmount(dir); err != nil || !ok {
		return err
	}
	if !waitExit(pidfd, umountWait) {
		return fmt.Errorf("%s is unmounted, but its daemon (pid %d) has not exited %v later; see its log", dir, pid, umountWait)
	}
	return nil
}

// daemonOf is the process serving the mount at mountpoint, as a pid
// and a pidfd, which names that process even once its pid is reused: it
// is taken while the process still holds its pid file.
func daemonOf(mountpoint string) (pid, pidfd int, ok bool) {
	pid, ok = gsvfsd.MountServer(mountpoint)
	if !ok {
		return 0, 0, false
	}
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, 0, false
	}
	if again, ok := gsvfsd.MountServer(mountpoint); !ok || again != pid {
		unix.Close(pidfd) // it exited meanwhile
		return 0, 0, false
	}
	return pid, pidfd, true
}

// waitExit waits, at most within, for the process of pidfd to exit, and
// reports whether it has.
func waitExit(pidfd int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		left := time.Until(deadline)
		if left < 0 {
			return false
		}
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR {
			continue
		}
		return err == nil && n > 0
	}
}
