//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// open(O_TMPFILE) back to back in a directory of the mount, as Python's
// tempfile and many a database do: ext4 gives the second file the inode
// number and birth time of the first, just freed, and each open must still
// make a file of its own. Each one linked in place (linkat through
// /proc/self/fd with AT_SYMLINK_FOLLOW) keeps what was written to it.
func TestTmpfileBackToBack(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("SKIPPED: no python3 here: %v", err)
	}
	d := startMount(t)
	dir := d.Path("workspaces")
	// The reproduction as reported.
	testenv.Run(t, dir, py, "-c", "import os;[os.close(os.open('.',os.O_TMPFILE|os.O_RDWR,0o600)) for _ in range(6)]")
	// os.link with a dst_dir_fd is linkat(2) with AT_SYMLINK_FOLLOW
	// (without one Python calls link(2), which follows nothing).
	out := testenv.Run(t, dir, py, "-c", `
import os
here = os.open('.', os.O_RDONLY | os.O_DIRECTORY)
for i in range(6):
    fd = os.open('.', os.O_TMPFILE | os.O_RDWR, 0o600)
    os.write(fd, b'tmp %d' % i)
    if i % 2 == 0:
        os.link('/proc/self/fd/%d' % fd, 'linked%d' % i, dst_dir_fd=here)
    os.close(fd)
print(' '.join(open('linked%d' % i).read() for i in range(0, 6, 2)))
`)
	if got, want := strings.TrimSpace(out), "tmp 0 tmp 2 tmp 4"; got != want {
		t.Errorf("the linked O_TMPFILE files read through the mount: %q, want %q", got, want)
	}
	ents, err := os.ReadDir(filepath.Join(d.Root, "workspaces"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if got, want := strings.Join(names, " "), "linked0 linked2 linked4"; got != want {
		t.Errorf("on the disk: %q, want %q (the unlinked ones leave nothing)", got, want)
	}
}
