//go:build linux

package diskfs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// subscribe watches f's tree and returns the changes as they come.
func subscribe(t *testing.T, f *diskfs.FS) <-chan vfs.Change {
	t.Helper()
	ch := make(chan vfs.Change, 1024)
	stop := f.Root().(vfs.Watcher).Watch(func(cs []vfs.Change) {
		for _, c := range cs {
			ch <- c
		}
	})
	t.Cleanup(stop)
	return ch
}

// next waits for the change of the entry name.
func next(t *testing.T, ch <-chan vfs.Change, name string) vfs.Change {
	t.Helper()
	return nextWhere(t, ch, fmt.Sprintf("change of %q", name), func(c vfs.Change) bool { return c.Name == name })
}

// nextWhere waits for the first change on ch that match accepts, passing
// over the others; what names it in the failure.
func nextWhere(t *testing.T, ch <-chan vfs.Change, what string, match func(vfs.Change) bool) vfs.Change {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case c := <-ch:
			if match(c) {
				return c
			}
		case <-timeout:
			t.Fatalf("no %s reported", what)
		}
	}
}

func attr(t *testing.T, n vfs.Node) vfs.Attr {
	t.Helper()
	a, err := n.Attr(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Another program's changes in a directory an edge holds are reported
// with what the name leads to now.
func TestWatchReportsOutsideChanges(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a := attr(t, f.Root()); a.Watched {
		t.Fatal("the root says watched before anyone subscribes")
	}
	ch := subscribe(t, f)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	sub, err := f.Root().Lookup(ctx, "sub")
	if err != nil {
		t.Fatal(err)
	}
	subAttr := attr(t, sub)
	if !subAttr.Watched {
		t.Fatal("a directory the tree holds is not watched")
	}

	if err := os.WriteFile(filepath.Join(dir, "sub", "new"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := next(t, ch, "new")
	if c.Dir != subAttr.Ino || c.Attr.Ino == 0 {
		t.Fatalf("creation reported as %+v, want dir %d and the file", c, subAttr.Ino)
	}
	f1, err := sub.Lookup(ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	if !attr(t, f1).Watched {
		t.Fatal("a file in a watched directory is not watched")
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "new"), []byte("xy"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch, "new"); !c.Data || c.Attr.Size != 2 {
		t.Fatalf("write reported as %+v, want data changed and size 2", c)
	}
	if err := os.Remove(filepath.Join(dir, "sub", "new")); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch, "new"); c.Attr.Ino != 0 {
		t.Fatalf("removal reported as %+v, want the name gone", c)
	}

	// Moved away and back: still watched where it is.
	if err := os.Rename(filepath.Join(dir, "sub"), filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	next(t, ch, "moved")
	if err := os.WriteFile(filepath.Join(dir, "moved", "after"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if c := next(t, ch, "after"); c.Dir != subAttr.Ino {
		t.Fatalf("a change in the moved directory reported as %+v", c)
	}
}

// A file written right after its directory was moved, before the watch
// follows the directory to its new path, is still reported changed: its
// event came under the old path, which names nothing now, so the entries
// of a directory watched again are all reported.
func TestWatchWriteRightAfterDirMove(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch := subscribe(t, f)
	for i := range 20 { // each round a fresh race between the move and the write
		d1, d2 := filepath.Join(dir, fmt.Sprint("a", i)), filepath.Join(dir, fmt.Sprint("b", i))
		if err := os.Mkdir(d1, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d1, "g"), []byte("before"), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := f.Root().Lookup(ctx, filepath.Base(d1))
		if err != nil {
			t.Fatal(err)
		}
		g, err := d.Lookup(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		ino := attr(t, g).Ino
		drain(ch)
		if err := os.Rename(d1, d2); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d2, "g"), []byte("after!"), 0o644); err != nil {
			t.Fatal(err)
		}
		if c := nextData(t, ch, ino); c.Attr.Size != 6 {
			t.Fatalf("round %d: the write reported as %+v, want size 6", i, c)
		}
	}
}

// nextData waits for a change of the file ino's data.
func nextData(t *testing.T, ch <-chan vfs.Change, ino uint64) vfs.Change {
	t.Helper()
	return nextWhere(t, ch, fmt.Sprintf("change of the data of inode %d", ino), func(c vfs.Change) bool { return c.Attr.Ino == ino && c.Data })
}

func drain(ch <-chan vfs.Change) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// Out of inotify watches, directories say they are unwatched (edges keep
// short cache times there), and the tree counts them.
func TestWatchLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	subscribe(t, f)
	diskfs.LimitWatches(f, 1)
	var held []vfs.Node // the edges' references keep the nodes
	watched := 0
	for _, d := range []string{"a", "b", "c"} {
		n, err := f.Root().Lookup(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, n)
		if attr(t, n).Watched {
			watched++
		}
	}
	if watched != 1 {
		t.Fatalf("%d of 3 directories watched with room for 1", watched)
	}
	w, u, on := f.Root().(interface {
		WatchCounts() (int, int, bool)
	}).WatchCounts()
	if !on || w != 2 || u != 2 {
		t.Fatalf("counts: watched %d unwatched %d (on %v), want 2 (root and one) and 2", w, u, on)
	}
	runtime.KeepAlive(held)
}

// Taking and dropping locks, record locks (each owner's reopening of the
// file) and flock alike, is no change of the file: the watch reports
// none, so no edge drops its caches of the file for a lock. A change made
// after the locks marks the end: inotify keeps order.
func TestWatchIgnoresLocks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ch := subscribe(t, f)
	if err := os.WriteFile(filepath.Join(dir, "start"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	next(t, ch, "start") // the watch is in place
	for _, mode := range []int{os.O_RDONLY, os.O_RDWR} {
		l := openLocker(t, f.Root(), "f", mode)
		typ := map[int]vfs.LockType{os.O_RDONLY: vfs.LockRead, os.O_RDWR: vfs.LockWrite}[mode]
		for _, flock := range []bool{false, true} {
			for _, t2 := range []vfs.LockType{typ, vfs.LockUnlock} {
				_, err := l.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockSet, Flock: flock, Owner: vfs.LockOwner{Edge: "test", ID: 1},
					Lock: vfs.Lock{Type: t2, End: vfs.LockEOF}})
				if err != nil {
					t.Fatalf("mode %o flock %v type %v: %v", mode, flock, t2, err)
				}
			}
		}
		l.Lock(ctx, vfs.LockRequest{Cmd: vfs.LockClose})
	}
	if err := os.WriteFile(filepath.Join(dir, "end"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for {
		c := <-ch
		if c.Name == "f" {
			t.Fatalf("locking f was reported as a change of it: %+v", c)
		}
		if c.Name == "end" {
			return
		}
	}
}
