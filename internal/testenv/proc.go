package testenv

import (
	"fmt"
	"os"
	"runtime"
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

// GoroutineState is the state the runtime gives the first goroutine of
// this process whose stack mentions marker (a function's qualified name,
// such as "procfs.readAcrossKill"): "running", "runnable", "select",
// "chan receive" and so on, or "" when no goroutine matches. A test that
// must act while a call of its own is blocked runs the call in a named
// function and waits until that goroutine is seen blocked.
func GoroutineState(marker string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		if !strings.Contains(g, marker) {
			continue
		}
		_, rest, _ := strings.Cut(g, "[")
		st, _, _ := strings.Cut(rest, "]")
		st, _, _ = strings.Cut(st, ",") // "select, 2 minutes"
		return st
	}
	return ""
}

// Blocked says whether a goroutine state from GoroutineState is one of a
// goroutine that waits (on a channel, a lock, a system call...).
func Blocked(state string) bool {
	return state != "" && state != "running" && state != "runnable"
}
