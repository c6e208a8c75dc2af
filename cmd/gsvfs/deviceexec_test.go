//go:build linux

package main

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// A one-shot command on a device through its gateway's mount (mkdir,
// exec, cat wait, rmdir under /mnt/ID/proc) sends the device no request
// the protocol does not need: no listxattr of a session's directory on
// each walk to it, no stat before the open of a generated file the walk
// just stated. The count, not a time, is checked; flushes (the link's
// liveness probes, one a second) are not counted.
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
		return requestsSince(before, deviceRequests(t, stats)["alpha"])
	}
	oneShot("warm") // the first knows nothing yet of /proc
	got := oneShot("counted")
	sent := total(got)
	// 27 before, 2 xattrwalks and 9 getattrs among them: a walk to the
	// session's directory could bring a listxattr and its clunk, and
	// each open (ctl's, wait's) a stat.
	if sent > 28 || got["xattrwalk"] > 1 || got["getattr"] > 7 {
		t.Errorf("a one-shot exec sent the device %d requests (%v), want at most 28, at most 1 xattrwalk (the write's security.capability), at most 7 getattr", sent, got)
	} else {
		t.Logf("a one-shot exec sent the device %d requests: %v", sent, got)
	}
}
