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
// per cached directory of a large tree: it raises its open-file limit to
// the system's maximum (fs.nr_open) where it may (root with
// CAP_SYS_RESOURCE), else to its hard limit.
func TestDaemonRaisesFileLimit(t *testing.T) {
	want := maxFileLimit(t)
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

// maxFileLimit is the open-file limit a process like this one can reach:
// it tries fs.nr_open in a child of its own limits and falls back to the
// hard limit.
func maxFileLimit(t *testing.T) uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("/proc/sys/fs/nr_open")
	if err != nil {
		t.Fatal(err)
	}
	nrOpen, _ := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	try := syscall.Rlimit{Cur: lim.Cur, Max: nrOpen}
	if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &try) != nil {
		return lim.Max
	}
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	return nrOpen
}
