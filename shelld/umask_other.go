//go:build !linux

package shelld

import (
	"fmt"
	"os/exec"
)

// startWithUmask starts cmd with the given umask without touching the
// daemon's own: without a per-thread umask (Linux's CLONE_FS), a small
// /bin/sh sets it and then becomes the command.
func startWithUmask(cmd *exec.Cmd, umask int) error {
	script := fmt.Sprintf(`umask %04o && exec "$0" "$@"`, umask)
	cmd.Args = append([]string{"/bin/sh", "-c", script, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	return cmd.Start()
}
