package ninep

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/internal/testenv"
	"github.com/gsvfs/gsvfs/vfs"
)

// waitUntil polls cond for at most hangBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, hangBound, what, cond)
}

// watchRoot is a tree whose changes the test makes up.
type watchRoot struct {
	vfs.Node
	mu sync.Mutex
	fn func([]vfs.Change)
}

func (w *watchRoot) Watch(fn func([]vfs.Change)) (stop func()) {
	w.mu.Lock()
	w.fn = fn
	w.mu.Unlock()
	return func() {}
}

func (w *watchRoot) Fence(context.Context) error { return nil }

func (w *watchRoot) send(cs []vfs.Change) {
	w.mu.Lock()
	fn := w.fn
	w.mu.Unlock()
	fn(cs)
}

// TestWatchBacklogBounded: a client that asks for changes once and then
// stops costs the server MaxWatchBacklog changes at most: past them it
// drops the backlog and the next Rwatch says changes were lost. A plain
// 9P2000.L connection may not watch at all.
func TestWatchBacklogBounded(t *testing.T) {
	root := &watchRoot{Node: newDisk(t)}
	_, addr := serve(t, root)
	plain := wireDial(t, addr)
	defer plain.nc.Close()
	plain.rpc(t, NoTag, &Tversion{Msize: 65536, Version: Version})
	plain.rpc(t, 1, &Tattach{Fid: 1, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}})
	if r, ok := plain.rpc(t, 1, &Twatch{Fid: 1, Count: 65536}).(*Rlerror); !ok || syscall.Errno(r.Ecode) != syscall.EOPNOTSUPP {
		t.Errorf("Twatch on a plain connection: got %#v, want EOPNOTSUPP", r)
	}

	rc := wireDial(t, addr)
	defer rc.nc.Close()
	if rv := rc.rpc(t, NoTag, &Tversion{Msize: 65536, Version: VersionExt}).(*Rversion); rv.Version != VersionExt {
		t.Fatalf("version: %q", rv.Version)
	}
	rc.rpc(t, 1, &Tattach{Fid: 1, Tauth: Tauth{Afid: NoFid, Uname: "root", NUname: 0}})
	if r, ok := rc.rpc(t, 1, &Twatch{Fid: 1, Count: 65536}).(*Rwatch); !ok || len(r.Changes) != 0 {
		t.Fatalf("first Twatch: got %#v, want an empty Rwatch at once", r)
	}
	for i := range MaxWatchBacklog + 1 {
		root.send([]vfs.Change{{Dir: 1, Name: fmt.Sprint("f", i)}})
	}
	r, ok := rc.rpc(t, 1, &Twatch{Fid: 1, Count: 65536}).(*Rwatch)
	if !ok || len(r.Changes) != 1 || r.Changes[0].Flags&watchLost == 0 {
		t.Fatalf("Twatch after %d changes: got %#v, want one Lost", MaxWatchBacklog+1, r)
	}
	root.send([]vfs.Change{{Dir: 1, Name: "after"}})
	r, ok = rc.rpc(t, 1, &Twatch{Fid: 1, Count: 65536}).(*Rwatch)
	if !ok || len(r.Changes) != 1 || r.Changes[0].Name != "after" {
		t.Fatalf("Twatch after the loss: got %#v, want the change made since", r)
	}
}

// flood answers every Twatch at once with as many changes as the reply
// may hold, each of a file never seen (a rogue gsvfs peer's part).
type flood struct {
	batches atomic.Int64
	next    atomic.Uint64
}

func (f *flood) batch(m *Twatch) Message {
	var cs []vfs.Change
	for size := headerSize + 2; ; {
		n := f.next.Add(1)
		c := vfs.Change{Dir: n, Name: fmt.Sprintf("flood-%012d", n), Attr: vfs.Attr{Ino: n + 1, Mode: syscall.S_IFREG}}
		if size += changeSize(c); size > int(m.Count) {
			break
		}
		cs = append(cs, c)
	}
	f.batches.Add(1)
	return host.rwatch(cs)
}

// TestNoticeFloodBounded: a peer that streams changes as fast as it may
// makes the client hold one batch at a time, whatever its watchers do
// (a slow one here), and the cache stays within its bound.
func TestNoticeFloodBounded(t *testing.T) {
	f := &flood{}
	c, root := dial(t, (&rogue{watch: f.batch}).serve(t), "")
	var seen atomic.Int64
	stop := root.(vfs.Watcher).Watch(func(cs []vfs.Change) {
		seen.Add(int64(len(cs)))
		time.Sleep(time.Millisecond) // a slow watcher
	})
	defer stop()
	// The Twatches the client keeps waiting, sampled as it goes.
	most := 0
	flooded := func(n int64) func() bool {
		return func() bool {
			c.mu.Lock()
			most = max(most, c.polls)
			c.mu.Unlock()
			return f.batches.Load() >= n
		}
	}
	waitUntil(t, "200 batches", flooded(200))
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	waitUntil(t, "200 more batches", flooded(400))
	runtime.GC()
	runtime.ReadMemStats(&after)
	if most > 1 {
		t.Errorf("the client kept %d Twatches waiting at once, want 1", most)
	}
	if n := c.Notices().Cached; n > DefaultCacheSize {
		t.Errorf("the cache holds %d entries, want at most %d", n, DefaultCacheSize)
	}
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 16<<20 {
		t.Errorf("the heap grew %d MB over 200 batches, want under 16", grew>>20)
	}
	if seen.Load() == 0 {
		t.Error("the watcher heard of no change")
	}
}

// The directories a connection holds watched for its client are bounded:
// past the bound the oldest is let go and the client is told changes
// were lost (what it holds of that directory is no longer kept true).
func TestHeldDirsBounded(t *testing.T) {
	defer func(n int) { maxHeldDirs = n }(maxHeldDirs)
	maxHeldDirs = 3
	var w connWatch
	w.start(&watchRoot{Node: vfs.NewStaticDir(nil)})
	defer w.end()
	for ino := range uint64(3) {
		w.hold(vfs.NewStaticDir(nil), ino+1)
		w.hold(vfs.NewStaticDir(nil), 1) // walked again: held once, most recent
	}
	if r := w.take(1 << 16); r != nil || w.held.lru.Len() != 3 {
		t.Fatalf("within the bound: %+v, %d held; want nothing to send and 3 held", r, w.held.lru.Len())
	}
	w.hold(vfs.NewStaticDir(nil), 4)
	r := w.take(1 << 16)
	if len(r) != 1 || !r[0].Lost {
		t.Fatalf("past the bound: %+v, want one Lost", r)
	}
	if _, kept := w.held.byIno[1]; !kept || w.held.lru.Len() != 3 {
		t.Errorf("past the bound: %d held, 1 kept %v; want 3 held, the most recently walked kept", w.held.lru.Len(), kept)
	}
}

// A peer that answers every Twatch with Lost makes the client drop its
// caches (and tell its watchers, a kernel's mount) twice, not at every
// batch: it stops trusting the notices until a second passes without a
// Lost, then trusts them again.
func TestRepeatedLossesDistrusted(t *testing.T) {
	var losing atomic.Bool
	losing.Store(true)
	var batches atomic.Int64
	answer := func(*Twatch) Message {
		batches.Add(1)
		if losing.Load() {
			return host.rwatch([]vfs.Change{{Lost: true}})
		}
		time.Sleep(10 * time.Millisecond) // a quiet server, with a change now and then
		return host.rwatch([]vfs.Change{{Attr: vfs.Attr{Ino: 7, Mode: syscall.S_IFREG}}})
	}
	c, root := dial(t, (&rogue{watch: answer}).serve(t), "")
	var lost atomic.Int64
	stop := root.(vfs.Watcher).Watch(func(cs []vfs.Change) {
		for _, ch := range cs {
			if ch.Lost {
				lost.Add(1)
			}
		}
	})
	defer stop()
	waitUntil(t, "100 losses", func() bool { return batches.Load() >= 100 })
	if n := lost.Load(); n > 2 {
		t.Errorf("100 Lost batches made the client drop everything %d times, want at most 2", n)
	}
	if c.Notices().On {
		t.Error("the notices are still trusted while the server keeps losing changes")
	}
	losing.Store(false)
	waitUntil(t, "the notices trusted again after a quiet second", func() bool { return c.Notices().On })
}
