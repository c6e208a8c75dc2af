package mounts

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
)

// farRoots are the roots of trees a round trip away (a gateway's
// devices): a stat of one waits until all of them are being asked, or
// until the test gives up on that, and the most asked at once is kept.
type farRoots struct {
	n      int
	mu     sync.Mutex
	asking int
	most   int
	allIn  chan struct{} // closed when all n are being asked
	giveUp chan struct{} // closed when the test stops waiting for that
}

func newFarRoots(n int) *farRoots {
	return &farRoots{n: n, allIn: make(chan struct{}), giveUp: make(chan struct{})}
}

type farRoot struct {
	*vfs.StaticDir
	f *farRoots
}

// Quick: the root is a round trip away.
func (farRoot) Quick() bool { return false }

func (r farRoot) Attr(ctx context.Context) (vfs.Attr, error) {
	f := r.f
	f.mu.Lock()
	f.asking++
	f.most = max(f.most, f.asking)
	if f.asking == f.n {
		close(f.allIn)
	}
	f.mu.Unlock()
	select {
	case <-f.allIn:
	case <-f.giveUp:
	}
	f.mu.Lock()
	f.asking--
	f.mu.Unlock()
	return r.StaticDir.Attr(ctx)
}

// A listing of a directory of mount points whose roots are far (/mnt of
// a gateway) asks all the roots at once, not one after another: 20
// devices cost the listing one round trip, not 20.
func TestMountPointsAskedAtOnce(t *testing.T) {
	const devices = 20
	f := newFarRoots(devices)
	tb := New()
	for i := range devices {
		if err := tb.Mount(fmt.Sprintf("/mnt/d%02d", i), farRoot{vfs.NewStaticDir(nil), f}); err != nil {
			t.Fatal(err)
		}
	}
	// Only a listing that asks one root after another waits this long.
	stop := time.AfterFunc(5*time.Second, func() { close(f.giveUp) })
	defer stop.Stop()
	if got := names(t, walk(t, tb.Root(), "mnt")); len(got) != devices {
		t.Fatalf("/mnt lists %d names, want %d: %v", len(got), devices, got)
	}
	if f.most != devices {
		t.Errorf("listing /mnt asked at most %d device roots at once, want all %d", f.most, devices)
	}
}

// A directory is quick (vfs.Quick: a 9P edge serves it on the goroutine
// reading the connection) only if the mount points just beneath it are:
// its listing stats them.
func TestQuickOnlyOverQuickMounts(t *testing.T) {
	tb := New()
	for p, root := range map[string]vfs.Node{
		"/sys":           vfs.NewStaticDir(nil),
		"/mnt/far":       farRoot{vfs.NewStaticDir(nil), newFarRoots(1)},
		"/deep/a/b/near": vfs.NewStaticDir(nil),
	} {
		if err := tb.Mount(p, root); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		path  []string
		quick bool
	}{
		{nil, true}, // "/": sys, and the ways to mnt and deep
		{[]string{"mnt"}, false},
		{[]string{"deep"}, true},
		{[]string{"deep", "a", "b"}, true},
		{[]string{"sys"}, true},
		{[]string{"mnt", "far"}, false},
	} {
		if got := vfs.IsQuick(walk(t, tb.Root(), tc.path...)); got != tc.quick {
			t.Errorf("/%v quick: got %v, want %v", tc.path, got, tc.quick)
		}
	}
}
