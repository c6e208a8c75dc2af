package diskfs_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// treeFds counts the process's descriptors that a tree of dir may hold:
// those of files under dir, and inotify's. Other descriptors are left
// out: earlier tests' trees, collected meanwhile, close theirs at any
// time.
func treeFds(t *testing.T, dir string) int {
	t.Helper()
	// An inotify descriptor's link names no path, but this.
	return dirFdsUnder(t, dir) + dirFdsUnder(t, "anon_inode:inotify")
}

// busyTree serves a tree of two directories and a file, walks it, and
// watches it, so that it holds every kind of descriptor it can: its root's,
// directories', an unlinked open file's pin and the watch's.
func busyTree(t *testing.T, dir string) (f *diskfs.FS, nodes []vfs.Node, stop func()) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "a", "gone"), []byte("x"), 0o644))
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	stop = f.Root().(vfs.Watcher).Watch(func([]vfs.Change) {})
	a := lookup(t, f.Root(), "a")
	gone := lookup(t, a, "gone")
	h, err := gone.Open(context.Background(), os.O_RDONLY)
	must(t, err)
	must(t, a.Remove(context.Background(), "gone", false))
	must(t, h.Close())
	return f, []vfs.Node{a, lookup(t, a, "b"), gone}, stop
}

// Close gives back every descriptor the tree took, is safe to call twice,
// and leaves nodes that fail with EBADF.
func TestCloseGivesBackDescriptors(t *testing.T) {
	dir := t.TempDir()
	before := treeFds(t, dir)
	f, nodes, stop := busyTree(t, filepath.Join(dir, "tree"))
	if treeFds(t, dir) <= before {
		t.Fatalf("the tree holds no descriptor: the test shows nothing")
	}
	must(t, f.Close())
	must(t, f.Close())
	if got := treeFds(t, dir); got != before {
		t.Errorf("%d descriptors open after Close, %d before the tree", got, before)
	}
	stop() // after Close: must not close the watch again
	ctx := context.Background()
	for i, n := range append(nodes, f.Root()) {
		if _, err := n.Attr(ctx); vfs.Errno(err) != syscall.EBADF {
			t.Errorf("node %d: attr after Close: %v, want EBADF", i, err)
		}
	}
	if _, err := nodes[0].Lookup(ctx, "b"); vfs.Errno(err) != syscall.EBADF {
		t.Errorf("lookup after Close: %v, want EBADF", err)
	}
	if _, err := f.Root().(vfs.StatFSer).StatFS(ctx); vfs.Errno(err) != syscall.EBADF {
		t.Errorf("statfs after Close: %v, want EBADF", err)
	}
	stop = f.Root().(vfs.Watcher).Watch(func([]vfs.Change) {})
	stop()
	if got := treeFds(t, dir); got != before {
		t.Errorf("%d descriptors open after a watch of the closed tree, %d before", got, before)
	}
}

// A tree nobody closes and nobody holds is collected with its root's
// descriptor: the nodes' cleanups do not keep it alive.
func TestUnheldTreeIsCollected(t *testing.T) {
	dir := t.TempDir()
	if n := treeFds(t, dir); n != 0 {
		t.Fatalf("%d descriptors of the tree open before it", n)
	}
	func() {
		f, err := diskfs.New(dir)
		must(t, err)
		_, err = f.Root().Attr(context.Background())
		must(t, err)
	}()
	for end := time.Now().Add(10 * time.Second); treeFds(t, dir) != 0; {
		if time.Now().After(end) {
			t.Fatalf("%d descriptors of the tree open: its root was never collected", treeFds(t, dir))
		}
		runtime.GC()
		runtime.Gosched()
	}
}
