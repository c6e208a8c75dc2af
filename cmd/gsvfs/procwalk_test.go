//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// /proc is safe to walk (gsvfs-proc(7), Expiry and blocking reads): a
// session made by reading clone and never used goes, an idle session
// nobody holds expires, and a recursive grep neither waits a yield time
// for each running session nor leaves a session behind.

// procGone waits until none of names is in /proc.
func procGone(t *testing.T, d *daemon, names ...string) {
	t.Helper()
	testenv.Eventually(t, procBound, "sessions "+strings.Join(names, ", ")+" gone from /proc", func() (bool, string) {
		have := procNames(t, d)
		for _, name := range names {
			if slices.Contains(have, name) {
				return false, strings.Join(have, " ")
			}
		}
		return true, ""
	})
}

// TestProcIdleSessionsGo: `cat /proc/clone` leaves no session for long,
// and an idle session nobody holds expires after the idle time, while one
// with an open file stays; `cat clone` then a write to the session's ctl
// still runs the command.
func TestProcIdleSessionsGo(t *testing.T) {
	d := procMount(t, nil, "--session-idle", "3s")
	cloned := strings.TrimSpace(testenv.Run(t, d.Mnt, "cat", d.Path("proc/clone")))
	held := procNew(t, d, "held")
	procNew(t, d, "free")
	f, err := os.Open(held + "/stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	procGone(t, d, cloned, "free")
	if names := procNames(t, d); !slices.Contains(names, "held") {
		t.Errorf("the idle session with an open file went: /proc has %q", names)
	}
	f.Close()
	procGone(t, d, "held")

	// The documented use: read clone, then drive the session by name.
	dir := d.Path("proc/" + strings.TrimSpace(testenv.Run(t, d.Mnt, "cat", d.Path("proc/clone"))))
	procMustWrite(t, dir+"/ctl", "exec echo cloned-and-used\n")
	if st := procWaitEnd(t, dir); st.Status != "completed" {
		t.Errorf("a cloned session driven by ctl: %+v", st)
	}
}

// TestProcGrepWalk: with two running sessions whose yield is an hour,
// `grep -r x` over /proc ends (GNU grep opens files O_NONBLOCK, and the
// blocking files answer such an open at once), and the session its read
// of clone made goes.
func TestProcGrepWalk(t *testing.T) {
	if _, err := exec.LookPath("grep"); err != nil {
		t.Skipf("SKIPPED: no grep here: %v", err)
	}
	d := procMount(t, nil, "--session-idle", "3s")
	for _, name := range []string{"a", "b"} {
		dir := procNew(t, d, name)
		procMustWrite(t, dir+"/ctl", "yield 1h\nexec sleep 60\n")
		testenv.Eventually(t, procBound, name+" running", func() (bool, string) {
			st := procReadStatus(t, dir)
			return st.Status == "running", st.Status
		})
	}
	before := procNames(t, d)
	ctx, cancel := context.WithTimeout(context.Background(), procBound)
	defer cancel()
	out, err := exec.CommandContext(ctx, "grep", "-r", "x", d.Path("proc")).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("grep -r x /proc did not end within %v (a blocking read waited its yield): %s", procBound, out)
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("grep -r: %v", err)
	}
	testenv.Eventually(t, procBound, "/proc as before the grep", func() (bool, string) {
		now := procNames(t, d)
		return slices.Equal(now, before), strings.Join(now, " ")
	})
	for _, name := range []string{"a", "b"} {
		if st := procReadStatus(t, d.Path("proc/"+name)); st.Status != "running" {
			t.Errorf("session %s after the grep: %+v", name, st)
		}
	}
}
