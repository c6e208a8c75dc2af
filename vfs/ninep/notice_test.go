package ninep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gsvfs/gsvfs/vfs"
	"github.com/gsvfs/gsvfs/vfs/diskfs"
)

// serveHostDir serves a diskfs tree of a fresh host directory, which the
// tests then change behind the server's back.
func serveHostDir(t *testing.T) (*Server, Address, string) {
	t.Helper()
	dir := t.TempDir()
	d, err := diskfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv, addr := serve(t, d.Root())
	return srv, addr, dir
}

// frozenClock stops the client's cache clock, so an entry kept for
// CacheTTL stays until the test moves the clock on: what shows a change
// before that is a notice.
type frozenClock struct {
	mu sync.Mutex
	t  time.Time
}

func freeze(c *Client) *frozenClock {
	f := &frozenClock{t: time.Now()}
	c.cache.mu.Lock()
	c.cache.now = f.now
	c.cache.mu.Unlock()
	return f
}

func (f *frozenClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *frozenClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// waitUntil polls cond for at most hangBound.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(hangBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, hangBound)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// warmPass is what an `ls -l` asks of every file: the directory's
// listing, and of each name its attributes and the xattrs ls asks for.
func warmPass(t *testing.T, root vfs.Node, names ...string) {
	t.Helper()
	ctx := context.Background()
	if _, err := vfs.ReadDirAll(ctx, root); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		n, err := root.Lookup(ctx, name)
		if err != nil {
			t.Fatalf("lookup %s: %v", name, err)
		}
		if _, err := n.Attr(ctx); err != nil {
			t.Fatal(err)
		}
		for _, x := range []string{"security.selinux", "system.posix_acl_access"} {
			if _, err := n.(vfs.Xattrer).GetXattr(ctx, x); !errors.Is(err, syscall.ENODATA) {
				t.Fatalf("getxattr %s %s: %v, want ENODATA", name, x, err)
			}
		}
	}
	if _, err := root.Lookup(ctx, "absent"); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("lookup of a missing name: %v, want ENOENT", err)
	}
}

func attrOf(t *testing.T, dir vfs.Node, name string) (vfs.Attr, error) {
	t.Helper()
	n, err := dir.Lookup(context.Background(), name)
	if err != nil {
		return vfs.Attr{}, err
	}
	return n.Attr(context.Background())
}

// TestNoticesKeepCacheTrue: against a gsvfs server, what the client
// caches costs no round trip when asked again (listings, attributes,
// xattr misses, missing names), and a change made on the server's disk
// behind its back shows at once, by the server's notice, though the
// cache's clock stands still.
func TestNoticesKeepCacheTrue(t *testing.T) {
	srv, addr, dir := serveHostDir(t)
	for _, name := range []string{"a", "b"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("one"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, root := dial(t, addr, "")
	clock := freeze(c)
	waitUntil(t, "the server's notices", func() bool { return c.Notices().On })
	ctx := context.Background()
	f, err := root.Lookup(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	warmPass(t, root, "a", "b")
	before := srv.Stats().Requests
	warmPass(t, root, "a", "b")
	// Lookups of names found walk (2); the rest is the cache's.
	if got := srv.Stats().Requests - before; got > 2 {
		t.Errorf("a warm pass sent %d requests, want at most 2 (the walks)", got)
	}
	clock.advance(time.Hour) // notices, not time, keep it: nothing expires
	before = srv.Stats().Requests
	f.Attr(ctx)
	if got := srv.Stats().Requests - before; got != 0 {
		t.Errorf("a watched file's attributes an hour on cost %d requests, want 0", got)
	}

	changes := []struct {
		what   string
		change func() error
		shows  func() bool
	}{
		{"a write", func() error { return os.WriteFile(filepath.Join(dir, "a"), []byte("longer"), 0o644) },
			func() bool { a, _ := f.Attr(ctx); return a.Size == int64(len("longer")) }},
		{"a chmod", func() error { return os.Chmod(filepath.Join(dir, "a"), 0o600) },
			func() bool { a, _ := f.Attr(ctx); return a.Mode&0o777 == 0o600 }},
		{"a creation", func() error { return os.WriteFile(filepath.Join(dir, "absent"), nil, 0o644) },
			func() bool { _, err := attrOf(t, root, "absent"); return err == nil && listed(root, "absent") }},
		{"a removal", func() error { return os.Remove(filepath.Join(dir, "b")) },
			func() bool {
				_, err := attrOf(t, root, "b")
				return errors.Is(err, syscall.ENOENT) && !listed(root, "b")
			}},
		{"an xattr set", func() error { return syscall.Setxattr(filepath.Join(dir, "a"), "user.k", []byte("v"), 0) },
			func() bool { v, err := f.(vfs.Xattrer).GetXattr(ctx, "user.k"); return err == nil && string(v) == "v" }},
	}
	for _, ch := range changes {
		f.(vfs.Xattrer).GetXattr(ctx, "user.k") // cache the miss too
		if err := ch.change(); err != nil {
			t.Fatalf("%s: %v", ch.what, err)
		}
		waitUntil(t, ch.what+" showing through the client", ch.shows)
	}
}

// listed says whether name is in dir's listing.
func listed(dir vfs.Node, name string) bool {
	ents, _ := vfs.ReadDirAll(context.Background(), dir)
	for _, e := range ents {
		if e.Name == name {
			return true
		}
	}
	return false
}

// TestCacheTTLWithPlainPeer: diod, a plain 9P2000.L server, sends no
// notices; the client still mounts and walks it, caches what it said for
// CacheTTL (a warm pass costs no round trip), and shows a change made on
// the disk once that has passed.
func TestCacheTTLWithPlainPeer(t *testing.T) {
	addr, dir := startDiod(t)
	if err := os.WriteFile(filepath.Join(dir, "a"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("two"), 0o644)
	c, root := dialPeer(t, addr, dir)
	if c.Extended() || c.Notices().On {
		t.Fatalf("diod: extended %v, notices %v; want neither", c.Extended(), c.Notices().On)
	}
	clock := freeze(c)
	ctx := context.Background()
	b, err := vfs.Walk(ctx, root, "sub/b")
	if err != nil {
		t.Fatalf("walk sub/b: %v", err)
	}
	if got := iopContent(t, root, "a"); got != "one" {
		t.Fatalf("read a: %q", got)
	}
	a1, err := attrOf(t, root, "a")
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a"), []byte("longer"), 0o644)
	os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)
	if a, _ := attrOf(t, root, "a"); a.Size != a1.Size {
		t.Errorf("within CacheTTL: size %d, want the cached %d", a.Size, a1.Size)
	}
	clock.advance(CacheTTL)
	if a, _ := attrOf(t, root, "a"); a.Size != int64(len("longer")) {
		t.Errorf("after CacheTTL: size %d, want %d", a.Size, len("longer"))
	}
	if !listed(root, "new") {
		t.Error("after CacheTTL: a file made on the disk is not listed")
	}
	if ba, err := b.Attr(ctx); err != nil || ba.Size != 3 {
		t.Errorf("sub/b: %+v, %v", ba, err)
	}
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
	if !ok || len(r.Changes) != 1 || !r.Changes[0].Lost {
		t.Fatalf("Twatch after %d changes: got %#v, want one Lost", MaxWatchBacklog+1, r)
	}
	root.send([]vfs.Change{{Dir: 1, Name: "after"}})
	r, ok = rc.rpc(t, 1, &Twatch{Fid: 1, Count: 65536}).(*Rwatch)
	if !ok || len(r.Changes) != 1 || r.Changes[0].Name != "after" {
		t.Fatalf("Twatch after the loss: got %#v, want the change made since", r)
	}
}

// floodServer is a rogue gsvfs peer: it answers every Twatch at once
// with as many changes as the reply may hold, each of a file never seen,
// and counts the Twatches it holds at a time.
type floodServer struct {
	waiting, most atomic.Int64
	batches       atomic.Int64
}

func (f *floodServer) conn(nc net.Conn) {
	rd := newFrameReader(nc)
	var next uint64
	for {
		bp, err := readFrame(rd, DefaultMaxMsize)
		if err != nil {
			return
		}
		tag, m, err := decodeFrame(*bp)
		if err != nil {
			return
		}
		var r Message
		switch m := m.(type) {
		case *Tversion:
			r = &Rversion{*m}
		case *Tattach:
			r = &Rattach{rqid{QID{Type: QTDir, Path: 1}}}
		case *Twalk:
			r = &Rwalk{}
		case *Twatch:
			f.most.Store(max(f.most.Load(), f.waiting.Add(1)))
			w := &Rwatch{}
			for size := headerSize + 2; ; next++ {
				c := vfs.Change{Dir: next, Name: fmt.Sprintf("flood-%012d", next), Attr: vfs.Attr{Ino: next + 1, Mode: syscall.S_IFREG}}
				if size += changeSize(c); size > int(m.Count) {
					break
				}
				w.Changes = append(w.Changes, c)
			}
			f.waiting.Add(-1)
			f.batches.Add(1)
			r = w
		default:
			r = &Rlerror{uint32(syscall.EOPNOTSUPP)}
		}
		if _, err := nc.Write(appendFrame(nil, tag, r)); err != nil {
			return
		}
	}
}

// TestNoticeFloodBounded: a peer that streams changes as fast as it may
// makes the client hold one batch at a time, whatever its watchers do
// (a slow one here), and the cache stays within its bound.
func TestNoticeFloodBounded(t *testing.T) {
	f := &floodServer{}
	c, root := dial(t, acceptEach(t, f.conn), "")
	var seen atomic.Int64
	stop := root.(vfs.Watcher).Watch(func(cs []vfs.Change) {
		seen.Add(int64(len(cs)))
		time.Sleep(time.Millisecond) // a slow watcher
	})
	defer stop()
	waitUntil(t, "200 batches", func() bool { return f.batches.Load() >= 200 })
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	waitUntil(t, "200 more batches", func() bool { return f.batches.Load() >= 400 })
	runtime.GC()
	runtime.ReadMemStats(&after)
	if most := f.most.Load(); most > 1 {
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
