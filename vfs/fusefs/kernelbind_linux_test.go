//go:build linux

package fusefs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// Kernel binds go on the FUSE mount the daemon made, never on another put
// at its mount point: a user's own FUSE mount there, once the daemon's is
// gone, gets no bind of root's, even before the first bind was laid.
func TestKernelBindsOnlyOnOwnMount(t *testing.T) {
	needKernelBinds(t)
	tree := func() vfs.Node { return vfs.NewStaticDir(map[string]vfs.Node{"x": vfs.NewStaticDir(nil)}) }
	dir, host := t.TempDir(), t.TempDir()
	m, err := New(dir, tree(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The daemon's mount goes, lazily as umount -l does, and another
	// FUSE mount takes its place.
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir, tree(), Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Detach(dir); Detach(dir) }) // the bind, were one laid, then the mount

	err = m.SetKernelBinds([]KernelBind{{Path: "/x", Dir: host}})
	if !errors.Is(err, syscall.ESTALE) {
		t.Errorf("kernel binds on a FUSE mount the daemon did not make: got error %v, want ESTALE", err)
	}
	if got := m.KernelBinds(); len(got) != 0 {
		t.Errorf("binds laid on a FUSE mount the daemon did not make: %v", got)
	}
}

// hostTree is a tree that says it is the host directory dir.
type hostTree struct {
	vfs.Node
	dir string
}

func (h hostTree) HostDir() (string, bool)        { return h.dir, true }
func (h hostTree) OpenHostDir() (*os.File, error) { return os.Open(h.dir) }

// A kernel bind is made from the directory the tree opens, not from the
// path it was known by: a path that has come to name another directory
// meanwhile binds nothing of that one.
func TestKernelBindFromTheTree(t *testing.T) {
	needKernelBinds(t)
	real, decoy := t.TempDir(), t.TempDir()
	for dir, text := range map[string]string{real: "real", decoy: "decoy"} {
		if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	m, err := New(dir, vfs.NewStaticDir(map[string]vfs.Node{"x": vfs.NewStaticDir(nil)}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if m.Unmount() != nil {
			Detach(dir)
		}
	})
	tree := hostTree{vfs.NewStaticDir(nil), real}
	if err := m.SetKernelBinds([]KernelBind{{Path: "/x", Dir: decoy, Tree: tree}}); err != nil {
		t.Fatal(err)
	}
	if out, err := child(10*time.Second, "cat", filepath.Join(dir, "x", "marker")); out != "real" {
		t.Errorf("the bind at /x shows %q (%v), want the tree's directory: real", out, err)
	}
}

// needKernelBinds skips, loudly, where kernel binds cannot be laid.
func needKernelBinds(t *testing.T) {
	t.Helper()
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: kernel binds need root (bind mounts); run the tests as root to cover them")
	}
}

// Unmount takes the binds and the mount down while the daemon's own check
// of its binds holds the mount for a moment (here, a descriptor of it),
// and says busy, with errBusy, while a process keeps a file open there.
func TestUnmountThroughAMomentsHold(t *testing.T) {
	needKernelBinds(t)
	dir := t.TempDir()
	m, err := New(dir, vfs.NewStaticDir(map[string]vfs.Node{"x": vfs.NewStaticDir(nil)}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Detach(dir); Detach(dir) })
	bind := func() {
		t.Helper()
		host := t.TempDir()
		if err := m.SetKernelBinds([]KernelBind{{Path: "/x", Dir: host, Tree: hostTree{vfs.NewStaticDir(nil), host}}}); err != nil {
			t.Fatal(err)
		}
	}
	bind()
	hold := func() *os.File {
		f, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	f := hold()
	start := time.Now()
	err = Unmount(dir)
	f.Close()
	if !errors.Is(err, errBusy) || time.Since(start) < busyGrace {
		t.Errorf("Unmount with a descriptor held throughout: %v after %v, want busy after %v", err, time.Since(start), busyGrace)
	}

	bind()
	f = hold()
	const moment = 300 * time.Millisecond // the daemon's check takes far less
	time.AfterFunc(moment, func() { f.Close() })
	if err := Unmount(dir); err != nil {
		t.Errorf("Unmount with a descriptor held for its first %v: %v", moment, err)
	}
	if _, ok := mountedAt(dir); ok {
		t.Errorf("%s is still mounted after Unmount", dir)
	}
}
