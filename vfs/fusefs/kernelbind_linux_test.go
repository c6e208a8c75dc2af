//go:build linux

package fusefs

import (
	"errors"
	"os"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// Kernel binds go on the FUSE mount the daemon made, never on another put
// at its mount point: a user's own FUSE mount there, once the daemon's is
// gone, gets no bind of root's, even before the first bind was laid.
func TestKernelBindsOnlyOnOwnMount(t *testing.T) {
	vfstest.NeedFUSE(t)
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED LOUDLY: kernel binds need root (bind mounts); run the tests as root to cover them")
	}
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
