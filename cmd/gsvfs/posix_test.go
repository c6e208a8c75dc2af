//go:build linux

package main

import (
	"os"
	"sort"
	"testing"

	"github.com/hanwen/go-fuse/v2/posixtest"
)

// notNative are the posixtest cases whose expectation ext4 itself does not
// meet; gsvfs is held to the native result by another test instead.
var notNative = map[string]string{
	"FcntlFlockLocksFile": "TestPosixLocksLikeExt4",
}

// TestPosix runs go-fuse's own POSIX suite against a gsvfs mount, in a
// disk-backed directory (/workspaces).
func TestPosix(t *testing.T) {
	runPosix(t, startMount(t).Path("workspaces"), notNative)
}

// runPosix runs every posixtest case but those in skip (name → the test
// that covers it instead, or why it cannot apply), each in a fresh
// directory below dir.
func runPosix(t *testing.T, dir string, skip map[string]string) {
	names := make([]string, 0, len(posixtest.All))
	for name := range posixtest.All {
		if skip[name] == "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			dir, err := os.MkdirTemp(dir, name)
			if err != nil {
				t.Fatal(err)
			}
			posixtest.All[name](t, dir)
		})
	}
}
