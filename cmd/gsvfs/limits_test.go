//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestDaemonRaisesFileLimit checks that the daemon can hold a descriptor
// per cached directory of a large tree: where it may (root with
// CAP_SYS_RESOURCE) it raises its open-file limit to the system's maximum,
// fs.nr_open. Elsewhere there is nothing to check: Go's runtime already
// lifts the soft limit to the hard one.
func TestDaemonRaisesFileLimit(t *testing.T) {
	want, ok := raisableFileLimit(t)
	if !ok {
		t.Skip("SKIPPED: this process may not raise its hard open-file limit (no CAP_SYS_RESOURCE), so neither may the daemon")
	}
	d := startMount(t)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if !strings.HasPrefix(line, "Max open files") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
		soft, _ := strconv.ParseUint(f[0], 10, 64)
		if soft != want {
			t.Errorf("daemon's open-file limit is %s, want %d (fs.nr_open)", f[0], want)
		}
		return
	}
	t.Fatalf("no open-file limit in /proc/PID/limits:\n%s", limits)
}

// raisableFileLimit reports fs.nr_open and whether a process here may
// raise its hard open-file limit to it (tried on this one, then undone).
func raisableFileLimit(t *testing.T) (uint64, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		t.Fatal(err)
	}
	nrOpen, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if nrOpen <= lim.Max {
		return nrOpen, false
	}
	try := syscall.Rlimit{Cur: lim.Cur, Max: nrOpen}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &try) != nil {
		return nrOpen, false
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("restoring the open-file limit: %v", err)
	}
	return nrOpen, true
}
