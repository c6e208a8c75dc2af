//go:build linux

package main

import (
	"maps"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// A one-shot command on a device through its gateway's mount (mkdir,
// exec, cat wait, rmdir under /mnt/ID/proc) sends the device no request
// the protocol does not need, counted by type and exact: the miss of the
// session's name, one mkdirget for the directory and its attributes; for
// ctl and wait a walk and the open, with no stat between or after them
// (/proc's attributes are fixed, AttrGsvfsFixed: the gateway holds them
// through the rmdir before, the walk to ctl and wait, and cat's fstat)
// and no getxattr of security.capability before the write (a generated
// file has no extended attributes); cat's two reads (the second finds
// the end) and the rmdir. Clunks go in the background, batched as it
// happens, and flushes (the link's liveness probes) are not counted.
func TestDeviceOneShotRequests(t *testing.T) {
	_, m, _ := joinedDevice(t, 9, 0)
	stats := filepath.Join(m.Mnt, "sys/stats")
	oneShot := func(name string) map[string]int64 {
		before := deviceRequests(t, stats)["alpha"]
		s := filepath.Join(m.Mnt, "mnt/alpha/proc", name)
		got := testenv.Run(t, m.Mnt, "sh", "-c", `mkdir "$1" && echo 'exec true' > "$1/ctl" && cat "$1/wait" && rmdir "$1"`, "sh", s)
		if !regexp.MustCompile(`"status":"completed"`).MatchString(got) {
			t.Fatalf("wait of %s: got %q, want a completed status", name, got)
		}
		sent := requestsSince(before, deviceRequests(t, stats)["alpha"])
		delete(sent, "clunk")
		delete(sent, "clunkmany")
		return sent
	}
	oneShot("warm") // the first knows nothing yet of /proc
	got := oneShot("counted")
	want := map[string]int64{"walkgetattr": 3, "mkdirget": 1, "walkopen": 2, "write": 1, "read": 2, "unlinkat": 1}
	if !maps.Equal(got, want) {
		t.Errorf("a one-shot exec sent the device %d requests %v, want %d: %v", total(got), got, total(want), want)
	}
}
