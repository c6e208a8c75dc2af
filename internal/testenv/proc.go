package testenv

import (
	"fmt"
	"os"
	"strings"
)

// FUSEWait is the kernel function a process sleeps in while the FUSE
// server has its request and has not answered: seen in KernelWait, it
// shows that a call on a mount is in flight in the daemon.
const FUSEWait = "request_wait_answer"

// KernelWait is the kernel function process pid is asleep in, from
// /proc/PID/wchan, or "" when it runs, has gone, or the system does not
// say (no /proc, as on macOS). It lets a test wait until a child is
// blocked in a call, rather than sleep and hope it is.
func KernelWait(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	if w := strings.TrimSpace(string(b)); err == nil && w != "0" {
		return w
	}
	return ""
}
