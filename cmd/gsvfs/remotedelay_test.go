//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A device's tree through the gateway at internet delay (25 ms each way,
// issue 30): what the cache holds costs no round trip, and what a
// session on the device changes shows through /mnt at once after the
// session says it is done, because the change's notice comes first.
func TestDeviceAtDelay(t *testing.T) {
	const delay = 25 * time.Millisecond
	src := filepath.Join(t.TempDir(), "src")
	makeTree(t, src, 3, 20, func(d, f int) string { return fmt.Sprintln("file", d, f) })
	_, m, _ := joinedDevice(t, 8, delay, "--bind", src+":/workspaces/src")
	tree := filepath.Join(m.Mnt, "mnt/alpha/workspaces/src")
	stats := filepath.Join(m.Mnt, "sys/stats")
	t.Run("warm", func(t *testing.T) { warmSendsNothing(t, tree, stats) })
	t.Run("causal", func(t *testing.T) { sessionChangesShowAfterWait(t, m.Mnt, src, tree, 100) })
}

// byType is the shell text printing the requests the gateway sent
// device alpha so far by type, from its /sys/stats ($S).
const byType = `grep '^device alpha requests' "$S"`

// warmSendsNothing: from inside the tree, after one walk, a walk again
// (ls -lR, find, du, stat of every file), reading every file again and
// opening each without reading send the device nothing but du's statfs:
// free space changes with every write, and no notice tells of it, so
// its answer is held for a moment only.
func warmSendsNothing(t *testing.T, tree, stats string) {
	script := `cd "$T" && ls -lR >/dev/null && cat d*/* >/dev/null && sleep 2 && ` + byType + ` &&
		ls -lR >/dev/null && find . -newer d0/f0 >/dev/null && du -s >/dev/null && stat d*/* >/dev/null &&
		cat d*/* >/dev/null && for f in d1/*; do : < "$f"; done && ` + byType
	cmd := shellCommand(t, script)
	cmd.Env = append(os.Environ(), "T="+tree, "S="+stats)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the warm walk: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the counts: %q", out)
	}
	sent := requestsSince(parseDeviceRequests(lines[0])["alpha"], parseDeviceRequests(lines[1])["alpha"])
	delete(sent, "statfs")
	if len(sent) != 0 {
		t.Errorf("a warm walk, reads and opens of 60 cached files sent the device %v, want nothing", sent)
	}
}

// sessionChangesShowAfterWait: a command of a session on the device
// rewrites a file the gateway holds, and once the command's wait says
// it completed, a read through /mnt gives the new bytes, every round.
func sessionChangesShowAfterWait(t *testing.T, mnt, src, tree string, rounds int) {
	s := filepath.Join(mnt, "mnt/alpha/proc/causal")
	if err := os.Mkdir(s, 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(s)
	file := filepath.Join(src, "d2", "f0")
	script := `i=0; while [ $i -lt "$N" ]; do
		echo "echo round $i > $F" > "$S/stdin" || exit 1
		grep -q '"status":"completed"' "$S/cmds/last/wait" || { echo "round $i: the command did not complete"; cat "$S/cmds/last/wait"; exit 1; }
		got=$(cat "$T/d2/f0")
		[ "$got" = "round $i" ] || echo "round $i: read $got"
		i=$((i+1))
	done`
	cmd := shellCommand(t, script)
	cmd.Env = append(os.Environ(), fmt.Sprint("N=", rounds), "S="+s, "F="+file, "T="+tree)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the rounds: %v\n%s", err, out)
	}
	if stale := strings.Count(string(out), "read "); stale > 0 {
		t.Errorf("%d of %d reads right after the session's wait were stale:\n%s", stale, rounds, out)
	}
}

// shellCommand is sh -c script, killed if it runs past five minutes.
func shellCommand(t *testing.T, script string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return exec.CommandContext(ctx, "sh", "-c", script)
}
