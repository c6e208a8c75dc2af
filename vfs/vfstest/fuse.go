package vfstest

import (
	"os"
	"os/exec"
	"testing"
)

// NeedFUSE skips, loudly, where FUSE mounts cannot be made: no /dev/fuse,
// or neither root nor fusermount3. CI runs as root with /dev/fuse, so there
// FUSE tests always run.
func NeedFUSE(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("SKIPPED: no /dev/fuse on this machine; FUSE tests cannot run")
	}
	if os.Geteuid() != 0 {
		if _, err := exec.LookPath("fusermount3"); err != nil {
			t.Skip("SKIPPED: not root and no fusermount3; FUSE tests cannot run")
		}
	}
}
