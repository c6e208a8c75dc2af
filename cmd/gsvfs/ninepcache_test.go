//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
)

// Issue 28's defects 1 and 2 through real FUSE mounts whose tree is
// vfs/ninep's client: `serve` + `mount --server`, and a device's tree at
// /mnt/ID through a gateway over TLS. vfs/ninep's stale_linux_test.go
// and cread_test.go have them at the client; these check that nothing
// between the client and a program (the kernel's page cache) keeps the
// stale bytes either.

// ninepTree is a directory seen through a 9P mount and the same one on
// the disk behind the server.
type ninepTree struct {
	name, mnt, disk string
}

// ninepTrees starts both paths.
func ninepTrees(t *testing.T) []ninepTree {
	srv, addr := startServe(t)
	d := mountServer(t, "unix:"+addr.Addr)
	disk := filepath.Join(srv.Root, "workspaces", "n")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	trees := []ninepTree{{"mount --server", d.Path("workspaces/n"), disk}}
	return append(trees, deviceTree(t))
}

// deviceTree is a device's bound directory at /mnt/alpha of a gateway
// mounted with --server.
func deviceTree(t *testing.T) ninepTree {
	host := newNetHost(t, 8)
	gw, sock := startServe(t, "--listen", "tls:0.0.0.0:0")
	dial := host.hostIP + ":" + gatewayPort(t, gw.Root)
	src := filepath.Join(t.TempDir(), "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	startDevice(t, host, filepath.Join(t.TempDir(), "dev"), "alpha", joinToken(t, gw.Root, "alpha", dial), "--bind", src+":/workspaces/src")
	m := mountServer(t, sock.String())
	testenv.WaitFor(t, 10*time.Second, "alpha joining", func() bool {
		_, err := os.Stat(filepath.Join(m.Mnt, "sys/devices/alpha"))
		return err == nil
	})
	waitOnline(t, m.Mnt, "alpha", true, 10*time.Second)
	return ninepTree{"/mnt/ID", filepath.Join(m.Mnt, "mnt/alpha/workspaces/src"), src}
}

// TestNinepMountsShowDiskChanges: a file changed on the server's disk
// again and again (overwritten in place, grown) reads as the disk has it
// through a descriptor held open across the changes and through fresh
// opens, soon after each change. Before the fix the held descriptor read
// the first change's bytes forever, and so did fresh opens (the kernel
// kept the pages it filled from the client's stale read-ahead window).
func TestNinepMountsShowDiskChanges(t *testing.T) {
	for _, tree := range ninepTrees(t) {
		t.Run(tree.name, func(t *testing.T) {
			disk, mnt := filepath.Join(tree.disk, "f"), filepath.Join(tree.mnt, "f")
			if err := os.WriteFile(disk, []byte(strings.Repeat("0", 100)), 0o644); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, 10*time.Second, "the file made on the disk", func() bool { _, err := os.Stat(mnt); return err == nil })
			reader := newLockAgent(t, "reader")
			fd := reader.open(mnt)
			reader.must(strings.Repeat("0", 100), "read %d 100", fd)
			for i := 1; i <= 4; i++ {
				want := strings.Repeat(fmt.Sprint(i), 100)
				if err := overwriteAt(disk, want, 0); err != nil {
					t.Fatal(err)
				}
				shows(t, fmt.Sprintf("overwrite %d, the held descriptor", i), want, func() string { return reader.do("read %d 100", fd) })
				shows(t, fmt.Sprintf("overwrite %d, a fresh open", i), want, func() string { return output("cat", mnt) })
				shows(t, fmt.Sprintf("overwrite %d, a fresh mmap", i), want, func() string { return mapped(t, mnt) })
			}
			grown := strings.Repeat("4", 100) + strings.Repeat("g", 100)
			if err := overwriteAt(disk, grown[100:], 100); err != nil {
				t.Fatal(err)
			}
			shows(t, "growth, the held descriptor", grown, func() string { return reader.do("read %d 300", fd) })
			shows(t, "growth, a fresh open", grown, func() string { return output("cat", mnt) })
		})
	}
}

// shows waits, for as long as a change may take to show (10 s: the
// notice crosses a link), until read gives want.
func shows(t *testing.T, what, want string, read func() string) {
	t.Helper()
	var got string
	if !testenv.Poll(10*time.Second, func() bool { got = read(); return got == want }) {
		t.Fatalf("%s: still reads %.12q... (%d bytes), want %.12q... (%d)", what, got, len(got), want, len(want))
	}
}

// mapped is the file at p as a program that maps it reads it.
func mapped(t *testing.T, p string) string {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal(err)
	}
	return output(py, "-c", `import mmap, sys
with open(sys.argv[1], "rb") as f:
    sys.stdout.write(mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)[:].decode())`, p)
}

func overwriteAt(p, data string, off int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteAt([]byte(data), off)
	return err
}

// truncateUpScript is the reproduction of defect 1: after a
// read to its end, a file grown by ftruncate reads its new part.
const truncateUpScript = `
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
os.pwrite(fd, b"A" * 0x22cc7, 0)
os.pread(fd, 0x3d14, 0x22cc7 - 0x3d14)
os.ftruncate(fd, 0x34c5b)
print(len(os.pread(fd, 0x100, 0x23000)), os.fstat(fd).st_size)
`

// TestNinepMountsTruncateUp: issue 28's defect 1 through the mounts.
func TestNinepMountsTruncateUp(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("SKIPPED: the reproduction is python3's, which is not installed: %v", err)
	}
	for _, tree := range ninepTrees(t) {
		t.Run(tree.name, func(t *testing.T) {
			got := testenv.Run(t, tree.mnt, py, "-c", truncateUpScript, filepath.Join(tree.mnt, "t"))
			if want := fmt.Sprintln(0x100, 0x34c5b); got != want {
				t.Errorf("pread of 0x100 at 0x23000 after ftruncate to 0x34c5b, and fstat: %q, want %q", got, want)
			}
		})
	}
}
