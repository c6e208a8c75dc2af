package guest9p

import (
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// notOn9P are the posixtest cases left out on every server, and why.
var notOn9P = map[string]string{
	// 9P2000.L has no fallocate message and v9fs no fallocate method:
	// EOPNOTSUPP with diod and gsvfs alike.
	"Fallocate":         "no fallocate in 9P2000.L: v9fs returns EOPNOTSUPP itself",
	"FallocateKeepSize": "no fallocate in 9P2000.L: v9fs returns EOPNOTSUPP itself",
	// The case wants a second descriptor of the same process to conflict.
	// POSIX record locks belong to the process (ext4 grants both; gsvfs
	// follows ext4, see TestFcntlLocks and cmd/gsvfs TestPosixLocksLikeExt4).
	// v9fs grants it in the guest's lock table and then sends a Tlock
	// with the same proc_id on another fid: diod, which locks per fid,
	// refuses it, so the case "passes" there for the wrong reason.
	"FcntlFlockLocksFile": "expects a process's own second descriptor to conflict, which POSIX and ext4 do not do",
	// 1000 rounds of about 30 RPCs each: about a minute alone in the
	// emulated guest. TestOpenSymlinkRace makes the same check in fewer.
	"OpenSymlinkRace": "too slow in the emulated guest; TestOpenSymlinkRace checks the same in fewer rounds",
}

// knownBugs are the posixtest cases a given server fails for reasons of
// its own; other servers are held to them.
var knownBugs = map[string]map[string]string{
	"diod": {
		"FstatDeleted": diodPathFids,
		"NlinkZero":    diodPathFids,
	},
}

// serialOnly cases must not share the process with other tests running:
// FdLeak counts the process's open descriptors.
var serialOnly = map[string]bool{"FdLeak": true}

// TestPosixtest runs go-fuse's POSIX suite, each case in a fresh directory
// of the mount, in parallel with each other and the other tests: each
// mostly waits for round trips through the emulated guest.
func TestPosixtest(t *testing.T) {
	mountDir(t)
	t.Parallel()
	for _, name := range posixNames(false) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runPosix(t, name)
		})
	}
}

// TestPosixtestSerial runs the serialOnly cases, before any parallel test.
func TestPosixtestSerial(t *testing.T) {
	mountDir(t)
	for _, name := range posixNames(true) {
		t.Run(name, func(t *testing.T) { runPosix(t, name) })
	}
}

// posixNames lists the posixtest cases, sorted: the serialOnly ones or the
// others.
func posixNames(serial bool) []string {
	var names []string
	for name := range posixtest.All {
		if serialOnly[name] == serial {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func runPosix(t *testing.T, name string) {
	if why := notOn9P[name]; why != "" {
		t.Skip("SKIPPED: " + why)
	}
	for server, bugs := range knownBugs {
		if why := bugs[name]; why != "" {
			knownBug(t, server, why)
		}
	}
	posixtest.All[name](t, freshDir(t))
}
