//go:build linux

package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	gsvfsd "github.com/gsvfs/gsvfs/internal/daemon"
	"github.com/gsvfs/gsvfs/internal/testenv"
)

// deviceRemountRounds is how many times TestDeviceTreeAcrossRemounts
// mounts the gateway again: with the fault it stands for, the tree broke
// within 12 rounds in three runs of four (whether it does depends on the
// order of the forgets); vfs/ninep's TestKidOfForgottenDirWalks finds
// that fault every time.
const deviceRemountRounds = 12

// TestDeviceTreeAcrossRemounts lists a device's tree through the gateway
// at internet delay, unmounts and mounts the gateway again, and lists it
// again, round after round. Each remount forgets, in any order, the
// nodes the gateway's link made from the listings its cache holds:
// directories never walked among them. Once, the link then clunked a
// fid it never had, took it back as free, and came to give one fid to
// two files: LOOKUP answered EBADF, READ and OPENDIR EINVAL, for every
// later mount.
func TestDeviceTreeAcrossRemounts(t *testing.T) {
	src := filepath.Join(t.TempDir(), "src")
	makeTree(t, filepath.Join(src, "small"), 17, 30, func(d, f int) string { return fmt.Sprint(d, f) })
	gw, m, _ := joinedDevice(t, 14, 25*time.Millisecond, "--bind", src+":/workspaces/src")
	tree := "mnt/alpha/workspaces/src/small"
	for round := range deviceRemountRounds {
		testenv.Run(t, m.Mnt, "ls", "-lR", tree)
		m.stop(t)
		m = mountServer(t, gsvfsd.Socket(gw.Root).String())
		t.Logf("round %d listed, mounted again", round+1)
	}
	testenv.Run(t, m.Mnt, "ls", "-lR", tree)
}
