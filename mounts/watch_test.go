package mounts

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// fenced is a backend that watches itself and counts its fences; a
// fence waits for before (if set) to close, and returns err.
type fenced struct {
	vfs.Node
	fences atomic.Int32
	called chan struct{}
	before <-chan struct{}
	err    error
}

func newFenced() *fenced {
	return &fenced{Node: vfs.NewStaticDir(nil), called: make(chan struct{})}
}

func (f *fenced) Watch(func([]vfs.Change)) func() { return func() {} }

func (f *fenced) Fence(ctx context.Context) error {
	if f.fences.Add(1) == 1 {
		close(f.called)
	}
	if f.before != nil {
		select {
		case <-f.before:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return f.err
}

// The table's fence reaches the fence of each backend it watches, all at
// once (one backend's fence waits here for the other's to begin), and
// passes a backend's error on; a backend not watched is not fenced.
func TestFenceReachesBackends(t *testing.T) {
	a, b := newFenced(), newFenced()
	a.before = b.called
	b.err = errors.New("b's fence failed")
	tab := New()
	for p, n := range map[string]vfs.Node{"/a": a, "/b": b, "/static": vfs.NewStaticDir(nil)} {
		if err := tab.Mount(p, n); err != nil {
			t.Fatal(err)
		}
	}
	w := tab.Root().(vfs.Watcher)
	if err := w.Fence(ctx); err != nil || a.fences.Load()+b.fences.Load() != 0 {
		t.Fatalf("fence while nobody watches: %v, backends fenced %d and %d times, want none",
			err, a.fences.Load(), b.fences.Load())
	}
	stop := w.Watch(func([]vfs.Change) {})
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Fence(ctx); err != b.err {
		t.Fatalf("fence: %v, want b's error", err)
	}
	if a.fences.Load() != 1 || b.fences.Load() != 1 {
		t.Fatalf("backends fenced %d and %d times, want once each", a.fences.Load(), b.fences.Load())
	}
	stop()
	if err := w.Fence(ctx); err != nil || a.fences.Load() != 1 || b.fences.Load() != 1 {
		t.Fatalf("fence after the watch stopped: %v, backends fenced %d and %d times, want once each still",
			err, a.fences.Load(), b.fences.Load())
	}
}
