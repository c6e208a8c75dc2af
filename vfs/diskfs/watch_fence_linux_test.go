//go:build linux

package diskfs_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// slowBatches makes the watches a test starts hold events far longer
// than any test waits, so only a fence hands a change on in time.
func slowBatches(t *testing.T) {
	t.Cleanup(diskfs.SetBatchDelay(time.Hour))
}

// slowTree is a disk tree of a new directory whose watch gathers for an
// hour (slowBatches).
func slowTree(t *testing.T) (*diskfs.FS, string) {
	t.Helper()
	slowBatches(t)
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// heard records the names the watch of f reports changed.
type heard struct {
	mu    sync.Mutex
	names map[string]bool
	all   []vfs.Change
}

func listen(t *testing.T, f *diskfs.FS) *heard {
	t.Helper()
	h := &heard{names: map[string]bool{}}
	stop := f.Root().(vfs.Watcher).Watch(func(cs []vfs.Change) {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range cs {
			h.names[c.Name] = true
		}
		h.all = append(h.all, cs...)
	})
	t.Cleanup(stop)
	return h
}

func (h *heard) has(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[name]
}

func fence(t *testing.T, f *diskfs.FS) {
	t.Helper()
	if err := f.Root().(vfs.Watcher).Fence(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A change made on the disk before Fence has been handed to the
// subscribers when Fence returns, however long the watch would gather
// it into a batch otherwise.
func TestFenceHandsOnEarlierChanges(t *testing.T) {
	f, dir := slowTree(t)
	h := listen(t, f)
	for i := range 50 {
		name := fmt.Sprint("f", i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fence(t, f)
		if !h.has(name) {
			t.Fatalf("round %d: %s, made before the fence, not handed on when it returned", i, name)
		}
	}
}

// Fences called at once, each after a change of its own, each return
// only once their own change has been handed on: a fence that comes
// while a marker is on its way waits for the next.
func TestFenceConcurrent(t *testing.T) {
	f, dir := slowTree(t)
	h := listen(t, f)
	const callers, rounds = 8, 40
	errs := make(chan error, callers)
	for c := range callers {
		go func() {
			errs <- func() error {
				for r := range rounds {
					name := fmt.Sprint("c", c, "r", r)
					if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
						return err
					}
					if err := f.Root().(vfs.Watcher).Fence(context.Background()); err != nil {
						return err
					}
					if !h.has(name) {
						return fmt.Errorf("%s, made before the fence, not handed on when it returned", name)
					}
				}
				return nil
			}()
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// The fence's marker lives where nothing of the tree is reported for
// it, even when the temporary directory is inside the tree and an edge
// holds the marker's directory: that directory is not watched, and no
// change names it or lies in it.
func TestFenceMarkerUnreported(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := listen(t, f)
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("the tree holds %v (%v), want the marker's directory alone", entries, err)
	}
	private, err := f.Root().Lookup(ctx, entries[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	pa := attr(t, private)
	if pa.Watched {
		t.Error("the marker's directory is watched as part of the tree")
	}
	for range 20 {
		fence(t, f)
	}
	if err := os.WriteFile(filepath.Join(dir, "end"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fence(t, f)
	if !h.has("end") {
		t.Fatal("a change before the last fence not handed on")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.all {
		if c.Dir == pa.Ino || c.Attr.Ino == pa.Ino {
			t.Errorf("the marker reported as a change: %+v", c)
		}
	}
}

// A fence whose context ends returns its error, one after the tree
// closed or while nobody watches returns nil at once, and one waiting
// when the tree closes returns nil.
func TestFenceEnds(t *testing.T) {
	f, dir := slowTree(t)
	w := f.Root().(vfs.Watcher)
	if err := w.Fence(context.Background()); err != nil {
		t.Fatalf("fence while nobody watches: %v", err)
	}
	// A subscriber that holds the watch up, so no marker gets through.
	hold, held := make(chan struct{}), make(chan struct{}, 1)
	stop := w.Watch(func([]vfs.Change) {
		select {
		case held <- struct{}{}:
		default:
		}
		<-hold
	})
	defer stop()
	defer close(hold)
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := w.Fence(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("fence with a cancelled context: %v", err)
	}
	go w.Fence(context.Background()) // hands x on, and is held there
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("a fence did not hand the change on")
	}
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := w.Fence(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fence held up past its deadline: %v", err)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- w.Fence(context.Background()) }()
	f.Close()
	if err := <-waiting; err != nil {
		t.Fatalf("fence waiting as the tree closed: %v", err)
	}
	if err := w.Fence(context.Background()); err != nil {
		t.Fatalf("fence after the tree closed: %v", err)
	}
}

// A marker someone removes (a cleaner of the temporary directory) costs
// the caches once, a batch saying changes were lost, and fences go on
// without one, handing on what the watch holds.
func TestFenceMarkerRemoved(t *testing.T) {
	f, _ := slowTree(t)
	h := listen(t, f)
	fence(t, f)
	private := diskfs.FenceDir(f)
	if private == "" {
		t.Fatal("no marker")
	}
	if err := os.RemoveAll(private); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := f.Root().(vfs.Watcher)
	for i := range 3 {
		if err := w.Fence(ctx); err != nil {
			t.Fatalf("fence %d after the marker went: %v", i, err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.all) != 1 || !h.all[0].Lost {
		t.Fatalf("handed on %+v, want one change saying changes were lost", h.all)
	}
}

// Without a temporary directory to make a marker in, a fence hands on
// what the watch holds and returns.
func TestFenceWithoutMarker(t *testing.T) {
	slowBatches(t)
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "none"))
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := listen(t, f)
	if diskfs.FenceDir(f) != "" {
		t.Fatal("a marker made in a directory that does not exist")
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !h.has("x") { // the watch reads x's event in its own time
		if err := f.Root().(vfs.Watcher).Fence(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A marker that does not come (dropped from the kernel's queue) holds
// a fence up for the marker's patience at most: then the batch goes out
// saying changes were lost, which covers what the fence waited for.
func TestFenceMarkerOverdue(t *testing.T) {
	slowBatches(t)
	t.Cleanup(diskfs.SetMarkerPatience(50 * time.Millisecond))
	dir := t.TempDir()
	f, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := listen(t, f)
	fence(t, f)
	if err := diskfs.LoseFenceMarkers(f); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fence(t, f)
		h.mu.Lock()
		got := h.all
		h.all = nil
		h.mu.Unlock()
		if len(got) == 0 || !got[0].Lost {
			t.Fatalf("a fence whose marker was lost returned after %+v, want a batch saying changes were lost", got)
		}
	}
}

// BenchmarkFence is the cost of a fence on a quiet tree: one caller
// after another, and callers at once (who share markers).
func BenchmarkFence(b *testing.B) {
	f, err := diskfs.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := f.Root().(vfs.Watcher)
	defer w.Watch(func([]vfs.Change) {})()
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			if err := w.Fence(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := w.Fence(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
