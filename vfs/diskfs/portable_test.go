package diskfs_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
	"github.com/gsvfs/gsvfs/vfs/vfstest"
)

// The portable tree (what diskfs is off Linux) passes the conformance
// suite here too.
func TestPortableConformance(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.Node {
		p, err := diskfs.NewPortable(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return p.Root()
	})
}

// Nothing through the portable tree leaves its directory: not ".." in a
// symlink, not an absolute symlink, not a symlink to a directory outside.
func TestPortableConfined(t *testing.T) {
	base := t.TempDir()
	state, outside := filepath.Join(base, "state"), filepath.Join(base, "outside")
	for _, err := range []error{
		os.Mkdir(state, 0o755), os.Mkdir(outside, 0o755),
		os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644),
		os.Symlink("../outside", filepath.Join(state, "up")),
		os.Symlink(outside, filepath.Join(state, "abs")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	p, err := diskfs.NewPortable(state)
	if err != nil {
		t.Fatal(err)
	}
	root := p.Root()
	for _, name := range []string{"up", "abs"} {
		n, err := root.Lookup(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Open(t.Context(), os.O_RDONLY); err == nil {
			t.Errorf("open of symlink %s: no error", name)
		}
		if _, err := n.Lookup(t.Context(), "secret"); vfs.Errno(err) != syscall.ENOTDIR && vfs.Errno(err) != syscall.ENOENT && err == nil {
			t.Errorf("lookup through symlink %s: %v", name, err)
		}
		if _, _, err := n.Create(t.Context(), "planted", os.O_RDWR|os.O_CREATE, 0o644); err == nil {
			t.Errorf("create through symlink %s: no error", name)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Errorf("a file was made outside the tree")
	}
}

// A closed portable tree's nodes fail with EBADF; Close may be called
// again.
func TestPortableClose(t *testing.T) {
	p, err := diskfs.NewPortable(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := p.Root()
	if _, err := root.Attr(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Attr(context.Background()); vfs.Errno(err) != syscall.EBADF {
		t.Errorf("attr after Close: %v, want EBADF", err)
	}
}
